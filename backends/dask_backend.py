"""The Dask backend: lazy, chunked arrays; ops and backward build one task graph.

A tensor holds a ``dask.array.Array``. Operations and backward rules add tasks
to its graph without computing anything; values are computed when Python needs
them (``.item()``, ``bool(x)``, ``float(x)``, printing, ``.numpy()``,
``.tolist()``) or when asked, several at once with their shared work, by
:func:`plugrad.compute`. Work runs on Dask's current scheduler: its threads by
default, a ``dask.distributed`` cluster once a ``Client`` exists. Install with
``pip install '.[dask]'`` from a checkout.
"""

from __future__ import annotations

import contextlib
import math
import operator
import os
import sys
import threading
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import numpy as np

from plugrad.backend import Backend, missing_library
from plugrad.backends._first_use import imported_on_first_use
from plugrad.backends.numpy_backend import NumpyRandom
from plugrad.creation import dlpack_exportable
from plugrad.errors import IndexOutOfRangeError, LinAlgError
from plugrad.hookspecs import hookimpl

__all__ = [
    "DaskBackend",
    "DaskRandom",
    "getitem",
    "plugrad_backends",
    "scatter_add",
    "setitem",
    "take",
    "take_along_axis",
]


_dask_array = imported_on_first_use("dask.array")


def _forget_thread_pools() -> None:
    """After a fork, in the child: drop the thread pools of Dask's threaded scheduler.

    The child has the parent's pools but none of their threads, so every compute would
    wait for ever (a DataLoader worker forked after the parent had computed hung); and a
    lock another thread held at the fork stays held. Dask makes new ones when it needs them.
    """
    threaded: Any = sys.modules.get("dask.threaded")
    if threaded is not None:
        threaded.default_pool = None
        threaded.pools.clear()
        threaded.pools_lock = threading.Lock()


if hasattr(os, "register_at_fork"):  # (not on Windows, which does not fork)
    os.register_at_fork(after_in_child=_forget_thread_pools)


class DaskRandom:
    """NumPy's generator (PCG64), its samples wrapped as one-chunk dask arrays.

    The samples are made eagerly on the client: the same seed gives the same
    numbers as on the ``numpy`` backend, whatever the chunking.
    """

    __slots__ = ("_numpy",)

    def __init__(self, seed: int | None) -> None:
        self._numpy = NumpyRandom(seed)

    def normal(self, shape: tuple[int, ...], dtype: Any) -> Any:
        return _dask_array().from_array(self._numpy.normal(shape, dtype))

    def uniform(self, shape: tuple[int, ...], dtype: Any) -> Any:
        return _dask_array().from_array(self._numpy.uniform(shape, dtype))

    def get_state(self) -> Any:
        return self._numpy.get_state()

    def set_state(self, state: Any) -> None:
        self._numpy.set_state(state)


def _as_dask_key(xp: Any, key: Any) -> tuple[Any, ...]:
    """``key`` as a tuple, its lists and NumPy arrays as dask arrays (NumPy's meaning of them),
    its slices' bounds as ints.

    Dask's own indexing takes one list or array at a time; as dask arrays they
    take the generic kernels' path, which indexes several together as NumPy does.
    """
    key = key if type(key) is tuple else (key,)
    return tuple(
        xp.asarray(k)
        if isinstance(k, (list, np.ndarray))
        else _with_int_bounds(k)
        if type(k) is slice
        else k
        for k in key
    )


def _with_int_bounds(key: slice) -> slice:
    """``key`` with its bounds as ints: Dask refuses a 0-d tensor as a bound (``x[:i]`` with
    ``i = y.argmax()``), which NumPy reads through ``__index__``."""
    bounds = (key.start, key.stop, key.step)
    if all(type(b) is int or b is None for b in bounds):
        return key
    return slice(*(None if b is None else operator.index(b) for b in bounds))


def _takes_natively(xp: Any, key: tuple[Any, ...], value: Any) -> bool:
    """Whether Dask's own item assignment takes ``key`` and ``value`` and assigns as NumPy does.

    Dask takes ints, slices, ``...``, and one 1-D boolean array with one value;
    it refuses 0-d index arrays, integer arrays of more than one dimension,
    several arrays together, masks of some axes only, and values for a mask's
    unknown number of elements, and it drops integer indices past the end of a
    dask array instead of raising. An integer index beside a slice with a
    negative step (``x[0, ::-1] = v``) fails in Dask (``IndexError``).
    """
    one_value = not getattr(value, "ndim", 0)
    masks = 0
    integers = any(isinstance(k, (int, np.integer)) and not isinstance(k, bool) for k in key)
    if integers and any(type(k) is slice and (k.step or 1) < 0 for k in key):
        return False
    for k in key:
        if k is Ellipsis or type(k) is slice:
            continue
        if k is None or isinstance(k, (bool, list, np.bool_)):
            return False
        if hasattr(k, "dtype") and not isinstance(k, np.integer):
            if not (xp.isdtype(k.dtype, "bool") and k.ndim == 1 and one_value):
                return False
            masks += 1
    return masks <= 1


def getitem(xp: Any, x: Any, /, key: Any) -> Any:
    """plugrad's ``getitem`` (``x[key]``), with a known length for a boolean mask.

    Dask leaves the length of ``x[mask]`` unknown (``nan``) until computed, and
    plugrad's tensors have known shapes: a mask of the leading axes is turned
    into the positions it selects by the namespace's ``nonzero``, which
    computes the mask (not ``x``) when called. Every other key is plugrad's
    generic kernel's (masks beside other indices also become ``nonzero``
    positions there).
    """
    from plugrad.plugins._index_plan import sole_mask
    from plugrad.plugins.indexing import getitem as generic

    key = _as_dask_key(xp, key)
    mask = sole_mask(xp, key, x.ndim)
    if mask is None:
        return generic.kernel(xp, x, key=key)
    leading = tuple(x.shape[: mask.ndim])
    if tuple(mask.shape) != leading:
        raise IndexError(
            f"a boolean index of shape {tuple(mask.shape)} does not match the indexed axes "
            f"of shape {leading}; a mask must have the shape of the axes it indexes"
        )
    (positions,) = xp.nonzero(xp.reshape(xp.asarray(mask), (-1,)))
    return xp.take(xp.reshape(x, (-1, *x.shape[mask.ndim :])), positions, axis=0)


def setitem(xp: Any, x: Any, value: Any, /, key: Any) -> Any:
    """plugrad's ``setitem`` (``x[key] = value`` as an op) with Dask's own item assignment.

    Dask arrays assign lazily into a new graph layer, so assigning into a copy
    leaves ``x`` as it was. A key Dask cannot assign with as NumPy does
    (integer arrays, as ``scatter`` writes with one of ``index``'s shape per
    axis, or several arrays together) is turned into the flat position of every
    element it names by :func:`getitem` over the positions of ``x``, and the
    values are assigned through a flat reshape of ``x`` with that one 1-D
    integer array. Getting the positions checks their bounds, which computes
    the index arrays: an index out of bounds raises ``IndexError`` before
    anything is assigned. Of repeated positions the last write wins, as in NumPy.
    """
    from plugrad.plugins._rules import refuse_value_it_cannot_hold, without_leading_ones

    refuse_value_it_cannot_hold(xp, "setitem", x, value)  # the cast below would not refuse
    value = without_leading_ones(xp, value)
    key = _as_dask_key(xp, key)
    if _takes_natively(xp, key, value):
        out = xp.asarray(x, copy=True)
        if 0 in getattr(value, "shape", ()):
            # Dask refuses any value without elements, even for a region without any.
            region = tuple(out[key].shape)
            try:
                fits = np.broadcast_shapes(tuple(value.shape), region) == region
            except ValueError:
                fits = False
            if not fits:
                raise ValueError(
                    f"shape mismatch: value array of shape {tuple(value.shape)} could not be "
                    f"broadcast to indexing result of shape {region}"
                )
            return out
        out[key] = value
        return out
    size = math.prod(x.shape)
    positions = getitem(xp, xp.reshape(xp.arange(size, dtype=xp.int64), x.shape), key=key)
    if not hasattr(value, "shape"):
        value = xp.asarray(value, dtype=x.dtype)
    elif value.dtype != x.dtype:
        value = xp.astype(value, x.dtype)
    values = xp.reshape(xp.broadcast_to(value, positions.shape), (-1,))
    flat = xp.asarray(xp.reshape(x, (-1,)), copy=True)
    with warnings.catch_warnings():
        # Dask casts the complex values' metadata (an empty array) to the positions' integer
        # dtype while it builds the graph: a warning about no value written.
        warnings.simplefilter("ignore", np.exceptions.ComplexWarning)
        flat[xp.reshape(positions, (-1,))] = values
    return xp.reshape(flat, x.shape).rechunk(x.chunks)


def scatter_add(xp: Any, values: Any, /, *, key: Any, shape: tuple[int, ...]) -> Any:
    """plugrad's ``scatter_add`` (the gradient of indexing), through :func:`setitem` for a mask.

    A mask selects each position once, so adding is assigning; Dask's own
    assignment through a mask cannot place values whose number it does not
    know. Every other key is plugrad's generic kernel's.
    """
    from plugrad.plugins._index_plan import sole_mask
    from plugrad.plugins._scatter import scatter_add_generic

    key = _as_dask_key(xp, key)
    if sole_mask(xp, key, len(shape)) is None:
        return scatter_add_generic(xp, values, key=key, shape=shape)
    return setitem(xp, xp.zeros(shape, dtype=values.dtype), values, key=key)


def _refuse_out_of_bounds(xp: Any, x: Any, indices: Any, axis: int) -> Any:
    """``indices`` as int64, once none along ``axis`` of ``x`` is found out of bounds
    (``IndexError``).

    Dask takes positions past the end of an axis from a dask array of indices
    without a word, and computing them gives values of other positions; the
    check computes the indices. Narrower integers are widened: Dask adds the
    size to negative ones in their own dtype (200 overflows int8).
    """
    if indices.dtype != xp.int64:
        indices = xp.astype(indices, xp.int64)
    if not -x.ndim <= axis < x.ndim:
        return indices  # the namespace's function refuses the axis itself
    size = x.shape[axis]
    if bool(xp.any((indices < -size) | (indices >= size))):
        raise IndexOutOfRangeError(
            f"an index is out of bounds for axis {axis % x.ndim} with size {size}"
        )
    return indices


def take(xp: Any, x: Any, indices: Any, /, *, axis: int | None = None) -> Any:
    """plugrad's ``take``, refusing indices out of bounds (see :func:`_refuse_out_of_bounds`).

    NOTE: Dask (2026.8) gives ``take`` of one index 0 as a dask array the shape of
    the whole axis (``take(x, [0], axis=1)`` of a ``(2, 9)`` array says ``(2, 9)``, and
    computes ``(2, 1)``); the indices, computed here anyway, are given as NumPy's.
    """
    if axis is None:  # positions in the flattened x, as PyTorch's take
        x, axis = xp.reshape(x, (-1,)), 0
    indices = _refuse_out_of_bounds(xp, x, indices, axis)
    if isinstance(indices, _dask_array().Array):
        indices = indices.compute()
    if indices.ndim == 1:
        return xp.take(x, indices, axis=axis)
    axis %= x.ndim  # indices of any shape, as NumPy's and PyTorch's take
    taken = xp.take(x, indices.reshape(-1), axis=axis)
    return xp.reshape(taken, (*x.shape[:axis], *indices.shape, *x.shape[axis + 1 :]))


def take_along_axis(xp: Any, x: Any, indices: Any, /, *, axis: int = -1) -> Any:
    """plugrad's ``take_along_axis``, refusing indices out of bounds, as :func:`take` does."""
    indices = _refuse_out_of_bounds(xp, x, indices, axis)
    return xp.take_along_axis(x, indices, axis=axis)


#: NumPy's floating-point warnings, by their messages.
_FLOATING_POINT_WARNINGS = r"(divide by zero|overflow|underflow|invalid value) encountered"


@contextlib.contextmanager
def _floating_point_warnings_off() -> Iterator[None]:
    """NumPy's floating-point warnings off while a graph is computed: inf and nan come
    without a word, as on the other backends (plugrad turns them off around each op, but
    Dask's tasks run when values are read; a warnings filter of "error" made each one an
    exception there). Warnings filters are the process's: Dask's threads see this one."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=_FLOATING_POINT_WARNINGS, category=RuntimeWarning)
        yield


@contextlib.contextmanager
def _linalg_errors_retold() -> Iterator[None]:
    """NumPy's and SciPy's LinAlgError from computing a graph as plugrad's, as the other
    backends' kernels raise it: on Dask a singular matrix shows only when values are computed."""
    try:
        yield
    except np.linalg.LinAlgError as error:
        raise LinAlgError(
            f"computing a Dask array: {error} (from a linear-algebra op, which Dask ran "
            "lazily): a matrix is singular, or not positive definite, where the op needs it to "
            "be; check its values, or use plugrad.linalg.pinv or lstsq"
        ) from error


class DaskBackend(Backend):
    """Dask arrays (lazy, chunked NumPy), through array-api-compat's Dask namespace.

    See ``plugrad.backends.dask_namespace``.

    Attributes
    ----------
    max_graph_layers : int
        How many layers (one per Dask operation) an array's task graph may
        hold before :meth:`settle` persists it. Building a Dask array copies
        its inputs' layer tables, and computing one fuses its chains of
        elementwise layers, each at a cost growing with the graph's size; a
        limit keeps a long chain of ops (or a training loop that never
        computes) linear in time. Set it on the backend object
        (``x.device.backend.max_graph_layers = 400`` for a tensor ``x`` on
        Dask) to trade
        laziness against that cost.
    """

    name = "dask"
    library = "dask"
    lazy = True
    views_share_memory = False  # a view is a new task graph over its base's
    max_graph_layers: int = 100

    def unavailable_reason(self) -> str | None:
        return missing_library(
            "dask", "dask.array", install="pip install '.[dask]' from a checkout"
        )

    def namespace(self) -> Any:
        from . import dask_namespace

        return dask_namespace

    def array_types(self) -> tuple[type, ...]:
        return (_dask_array().Array,)

    def devices(self) -> tuple[str, ...]:
        return ("cpu",)  # wherever the scheduler runs the tasks; to plugrad, one device

    def device_of(self, array: Any) -> str:
        return "cpu"

    def from_dlpack(self, obj: Any, device: Any) -> Any:
        # Dask arrays have no DLPack: wrap the host memory as one chunk (no copy).
        return _dask_array().from_array(np.from_dlpack(dlpack_exportable(obj)))

    def from_host(self, host: Any, device: Any) -> Any:
        host = np.array(host)
        # Dask cannot size the automatic chunks of object data; one chunk lets plugrad's
        # dtype check refuse it with its own error.
        return _dask_array().from_array(host, chunks=-1 if host.dtype == object else "auto")

    def copy_to_device(self, array: Any, device: Any) -> Any:
        return array

    def to_numpy(self, array: Any) -> np.ndarray:
        with _linalg_errors_retold(), _floating_point_warnings_off():
            computed = np.asarray(array.compute())  # computes the task graph
        # A read-only view, as JAX's: a write would change a copy (or a chunk's memory,
        # which compute may hand back as it is), never the tensor.
        view = computed.view()
        view.flags.writeable = False
        return view

    def compute(self, arrays: Sequence[Any]) -> list[Any]:
        import dask

        with _linalg_errors_retold(), _floating_point_warnings_off():
            values = dask.compute(*arrays)
        return [
            _dask_array().from_array(np.asarray(value), chunks=array.chunks)
            for value, array in zip(values, arrays)
        ]

    def settle(self, array: Any) -> None:
        """Persist ``array`` in place when its graph holds more than ``max_graph_layers`` layers.

        ``dask.persist`` computes the chunks (on a ``dask.distributed`` cluster
        they stay on its workers), and ``array`` then holds a graph of those
        chunks alone, under the same name: every tensor, view or saved value
        holding this array object continues from the computed chunks.
        """
        if not isinstance(array, _dask_array().Array):
            return  # a stand-in for one (plugrad.compile's capture records, settles nothing)
        graph = array.dask
        if len(graph.layers) <= self.max_graph_layers:
            return
        import dask

        with _floating_point_warnings_off():
            (persisted,) = dask.persist(array)
        array.dask = persisted.dask

    def write(self, array: Any, values: Any) -> Any:
        # A new array object, the tensor rebound to it (as JAX's): assigning into ``array``
        # (``array[...] = values``) would change every other holder of that object too, such
        # as the result of an op Dask answered with its input itself (``tile(x, 1)``).
        dask_array = _dask_array().Array
        if isinstance(values, (np.ndarray, np.generic)):
            values = _dask_array().asarray(values)
        if isinstance(values, dask_array) and isinstance(array, dask_array):
            if values.chunks != array.chunks:
                values = values.rechunk(array.chunks)  # the tensor keeps its chunks
            self.settle(values)
        return values  # (or a capture's stand-in for an array: plugrad.compile records it)

    def random_source(self, seed: int | None, device: Any) -> DaskRandom:
        return DaskRandom(seed)

    def kernels(self) -> Mapping[str, Callable[..., Any]]:
        from plugrad.plugins._rules import extrema_refusing_empty_axes

        return {
            # max/min/argmax/argmin: Dask's would give a lazy value, raising when computed.
            **extrema_refusing_empty_axes(),
            "getitem": getitem,
            "scatter_add": scatter_add,
            "setitem": setitem,
            "take": take,
            "take_along_axis": take_along_axis,
        }


@hookimpl
def plugrad_backends() -> list[Backend]:
    return [DaskBackend()]
