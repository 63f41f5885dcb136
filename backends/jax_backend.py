"""The JAX backend: plugrad's engine, eagerly, on JAX arrays (``jax:cpu:0``, ``jax:gpu:0``, ...).

Every op is one call into ``jax.numpy``, dispatched eagerly; plugrad records
the graph and runs the backward rules itself (``jax.grad`` is not involved).
Its 64-bit dtypes follow JAX's own switch, ``jax_enable_x64``, read when the
backend is first used. JAX arrays are immutable: in-place operations rebind a
tensor to a new array through :meth:`JaxBackend.write`. Install with
``pip install '.[jax]'`` from a checkout.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Collection, Mapping, Sequence
from types import ModuleType
from typing import Any

import numpy as np

from plugrad.backend import Backend, missing_library
from plugrad.backends._first_use import imported_on_first_use
from plugrad.creation import dlpack_exportable
from plugrad.hookspecs import hookimpl

__all__ = [
    "JaxBackend",
    "JaxRandom",
    "plugrad_backends",
    "searchsorted",
    "setitem",
    "unique_all",
]

_DLPACK_CPU = 1
_DLPACK_CUDA = 2
_DLPACK_ROCM = 10
_DLPACK_HOST = (_DLPACK_CPU, 3)  # plain and page-locked host memory


_jax = imported_on_first_use("jax")


class JaxRandom:
    """JAX's counter-based generator: a key, split once per draw, on one device."""

    __slots__ = ("_device", "_key")

    def __init__(self, seed: int | None, device: Any) -> None:
        jax = _jax()
        if seed is None:
            seed = int(np.random.SeedSequence().generate_state(1)[0])
        self._device = device
        # jax.random.key takes int64 seeds: the top bit of a 64-bit one is folded in.
        self._key = jax.random.key(seed % 2**63)
        if seed >= 2**63:
            self._key = jax.random.fold_in(self._key, 1)

    def _next_key(self) -> Any:
        self._key, key = _jax().random.split(self._key)
        return key

    def normal(self, shape: tuple[int, ...], dtype: Any) -> Any:
        jax = _jax()
        return jax.device_put(jax.random.normal(self._next_key(), shape, dtype), self._device)

    def uniform(self, shape: tuple[int, ...], dtype: Any) -> Any:
        jax = _jax()
        if np.dtype(dtype) == np.float16:
            # The multiples of 2**-11 below 1, as on the other backends (JAX's own float16
            # draws are those of 2**-10: bernoulli(1 - 2**-11) was never 0).
            wide = jax.random.uniform(self._next_key(), shape, jax.numpy.float32)
            sample = (jax.numpy.floor(wide * 2048) / 2048).astype(dtype)
        else:
            sample = jax.random.uniform(self._next_key(), shape, dtype)
        return jax.device_put(sample, self._device)

    def get_state(self) -> list[int]:
        """The key's data as a list of ints (JSON can hold it)."""
        return np.asarray(_jax().random.key_data(self._key)).tolist()

    def set_state(self, state: Any) -> None:
        jax = _jax()
        data = jax.numpy.asarray(np.asarray(state, dtype=np.uint32))
        self._key = jax.device_put(jax.random.wrap_key_data(data), self._device)


def setitem(xp: Any, x: Any, value: Any, /, key: Any) -> Any:
    """plugrad's ``setitem`` (``x[key] = value`` as an op) with JAX's ``x.at[key].set(value)``.

    JAX arrays cannot be written, so the generic kernel's item assignment on a
    copy fails; ``.at[].set`` returns the updated copy directly. It drops writes
    at indices out of bounds, where every other library raises: the key is
    planned first, which checks them.
    """
    from plugrad.plugins._index_plan import plan
    from plugrad.plugins._rules import device_of, refuse_value_it_cannot_hold

    refuse_value_it_cannot_hold(xp, "setitem", x, value)  # the cast below would not refuse
    if _indexes_at_positions(key):
        plan(xp, tuple(x.shape), key, device_of(x))
    value = xp.astype(xp.asarray(value), x.dtype)
    while True:
        try:
            return x.at[key].set(value)
        except ValueError:
            # NumPy drops a value's leading axes of size 1 that the target lacks (x[0] = row
            # of shape (1, n)); JAX refuses to broadcast to fewer dimensions.
            if not (value.ndim and value.shape[0] == 1):
                raise
            value = xp.reshape(value, value.shape[1:])


def _indexes_at_positions(key: Any) -> bool:
    """Whether ``key`` holds an int or an integer array (not only slices, masks and None)."""
    for k in key if type(key) is tuple else (key,):
        if type(k) is slice or k is None or k is Ellipsis or isinstance(k, bool):
            continue
        dtype = getattr(k, "dtype", None)
        if dtype is None or getattr(dtype, "kind", None) != "b":
            return True
    return False


def _index_dtype(xp: Any) -> Any:
    """The default index dtype now: int64 with ``jax_enable_x64`` on, int32 with it off."""
    return xp.__array_namespace_info__().default_dtypes()["indexing"]


def searchsorted(
    xp: Any, x1: Any, x2: Any, /, *, side: str = "left", sorter: Any = None,
    right: bool = False, out_int32: bool = False,
) -> Any:  # fmt: skip
    """plugrad's ``searchsorted`` in the default index dtype (PyTorch's ``out_int32``: int32).

    ``jax.numpy.searchsorted`` answers int32 even with 64-bit types on, where the
    standard asks for the default index dtype.
    """
    from plugrad.plugins.searching import searchsorted as generic

    found = generic.kernel(xp, x1, x2, side=side, sorter=sorter, right=right, out_int32=out_int32)
    index_dtype = xp.int32 if out_int32 else _index_dtype(xp)
    return found if found.dtype == index_dtype else xp.astype(found, index_dtype)


def unique_all(xp: Any, x: Any, /) -> tuple[Any, ...]:
    """plugrad's ``unique_all`` with ``jax.numpy.unique_all``, whose indices and counts are of
    the default index dtype (the generic kernel's counts come from ``searchsorted``, int32)."""
    return tuple(xp.unique_all(x))


class JaxBackend(Backend):
    """JAX arrays on CPUs, GPUs and TPUs, through ``jax.numpy`` (an Array API namespace)."""

    name = "jax"
    library = "jax"
    views_share_memory = False  # immutable arrays: a view is a new array

    def unavailable_reason(self) -> str | None:
        return missing_library("jax", install="pip install '.[jax]' from a checkout")

    def namespace(self) -> Any:
        from . import jax_namespace  # products at full precision on GPUs and TPUs

        return jax_namespace

    def array_types(self) -> tuple[type, ...]:
        return (_jax().Array,)

    def dtype_names(self, xp: ModuleType) -> Collection[str]:
        # JAX's inspection API leaves out 64-bit types unless jax_enable_x64 is on;
        # float16 is outside the standard but JAX has it.
        return {*xp.__array_namespace_info__().dtypes(), "float16", "bfloat16"}

    def devices(self) -> tuple[Any, ...]:
        jax = _jax()
        found = list(jax.devices())  # the default platform's devices, JAX's default first
        if found[0].platform != "cpu":
            found += jax.devices("cpu")
        return tuple(found)

    def device_names(self, devices: Sequence[Any]) -> list[str]:
        return [f"jax:{device.platform}:{device.id}" for device in devices]

    def device_of(self, array: Any) -> Any:
        # plugrad's arrays are never sharded, so ``.device`` is one device; an attribute,
        # where ``devices()`` would be a call that plugrad.compile cannot record.
        return array.device

    def device_context(self, device: Any) -> Any:
        return _jax().default_device(device)

    def dlpack_device(self, device: Any) -> tuple[int, int] | None:
        if device.platform == "cpu":
            return (_DLPACK_CPU, 0)
        if device.platform == "gpu":
            kind = _DLPACK_ROCM if "rocm" in device.client.platform_version else _DLPACK_CUDA
            return (kind, device.local_hardware_id)
        return None  # TPU memory is reached through the host

    def from_dlpack(self, obj: Any, device: Any) -> Any:
        jax = _jax()
        obj = dlpack_exportable(obj)
        if device.platform == "cpu" or obj.__dlpack_device__()[0] in _DLPACK_HOST:
            # JAX would share a host buffer only where it is aligned, and would put a shared
            # one on a GPU later, asynchronously: a change of the NumPy (or torch:cpu) array
            # made after the transfer would show in some tensors and not in others, under
            # arrays JAX takes as immutable. Host memory is always copied first.
            return self.from_host(np.from_dlpack(obj), device)
        try:
            return jax.device_put(self.namespace().from_dlpack(obj), device)
        except jax.errors.JaxRuntimeError:
            # JAX takes only compact strides (no NumPy view with a step, say): copy it.
            return self.from_host(np.from_dlpack(obj), device)

    def from_host(self, host: Any, device: Any) -> Any:
        return _jax().device_put(np.array(host), device)

    def copy_to_device(self, array: Any, device: Any) -> Any:
        return _jax().device_put(array, device)

    def write(self, array: Any, values: Any) -> Any:
        return values  # immutable arrays: the tensor is rebound to the new one

    def to_numpy(self, array: Any) -> np.ndarray:
        return np.asarray(array)  # read-only on the CPU, a copy from other devices

    def survives_fork(self) -> bool:
        # JAX starts its runtime's threads with its first computation (it then warns at
        # each os.fork() that the child will likely deadlock); imported alone, it forks well.
        bridge = sys.modules.get("jax._src.xla_bridge")
        return bridge is None or not getattr(bridge, "_backends", True)

    def synchronize(self, device: Any) -> None:
        # JAX runs a device's computations in order: waiting for a new one waits for all.
        (_jax().device_put(0, device) + 0).block_until_ready()

    def random_source(self, seed: int | None, device: Any) -> JaxRandom:
        return JaxRandom(seed, device)

    def kernels(self) -> Mapping[str, Callable[..., Any]]:
        return {"searchsorted": searchsorted, "setitem": setitem, "unique_all": unique_all}


@hookimpl
def plugrad_backends() -> list[Backend]:
    return [JaxBackend()]
