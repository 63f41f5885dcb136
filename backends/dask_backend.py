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

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from plugrad.backend import Backend, missing_library
from plugrad.backends.numpy_backend import NumpyRandom
from plugrad.hookspecs import hookimpl

__all__ = ["DaskBackend", "DaskRandom", "plugrad_backends", "setitem"]


def _dask_array() -> Any:
    import dask.array

    return dask.array


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


def setitem(xp: Any, x: Any, value: Any, /, key: Any) -> Any:
    """plugrad's ``setitem`` (``x[key] = value`` as an op) with Dask's own item assignment.

    Dask arrays assign lazily into a new graph layer, so assigning into a copy
    leaves ``x`` as it was; the generic kernel needs ``x.device``, which Dask
    arrays lack.
    """
    out = xp.asarray(x, copy=True)
    out[key] = value
    return out


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
        return _dask_array().from_array(np.from_dlpack(obj))

    def from_host(self, host: Any, device: Any) -> Any:
        host = np.array(host)
        # Dask cannot size the automatic chunks of object data; one chunk lets plugrad's
        # dtype check refuse it with its own error.
        return _dask_array().from_array(host, chunks=-1 if host.dtype == object else "auto")

    def copy_to_device(self, array: Any, device: Any) -> Any:
        return array

    def to_numpy(self, array: Any) -> np.ndarray:
        return np.asarray(array.compute())  # computes the task graph

    def compute(self, arrays: Sequence[Any]) -> list[Any]:
        import dask

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

        (persisted,) = dask.persist(array)
        array.dask = persisted.dask

    def write(self, array: Any, values: Any) -> Any:
        array[...] = values  # a lazy assignment: a layer on top of both graphs
        self.settle(array)
        return array

    def random_source(self, seed: int | None, device: Any) -> DaskRandom:
        return DaskRandom(seed)

    def kernels(self) -> Mapping[str, Callable[..., Any]]:
        return {"setitem": setitem}


@hookimpl
def plugrad_backends() -> list[Backend]:
    return [DaskBackend()]
