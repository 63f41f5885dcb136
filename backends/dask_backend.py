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
    """

    name = "dask"
    library = "dask"
    lazy = True

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
        return _dask_array().from_array(np.array(host))

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

    def random_source(self, seed: int | None, device: Any) -> DaskRandom:
        return DaskRandom(seed)

    def kernels(self) -> Mapping[str, Callable[..., Any]]:
        return {"setitem": setitem}


@hookimpl
def plugrad_backends() -> list[Backend]:
    return [DaskBackend()]
