"""Indexing: ``x[key]``, ``take``, ``take_along_axis``, and the scatter-add behind their gradients.

Every indexing gradient is one :func:`scatter_add`: zeros of the input's shape
with the output gradient *added* at the indexed positions, so an element picked
several times (repeated integer indices) receives the sum of all its
contributions -- never only the last one, which is what a plain
``out[key] = g`` would give.

Keys are NumPy's on every backend. The standard's own indexing is narrower
(integer arrays only beside integers, no negative steps in PyTorch, ...), so
the generic kernels rewrite each key into standard steps (``_index_plan``);
NumPy and CuPy index natively. The scatter-add kernels are in ``_scatter``.
One row per op (examples: the "Indexing" section of the API reference). The
Tensor methods ``x.gather(dim, index)``, ``x.index_select(dim, index)``,
``x.scatter(dim, index, src)``, ``x.scatter_add(dim, index, src)``,
``x.narrow(dim, start, length)`` and ``x.masked_select(mask)`` are PyTorch's.
"""

from __future__ import annotations

from typing import Any

from plugrad.hookspecs import hookimpl
from plugrad.opdef import OpDef, collect_ops, op
from plugrad.plugins._index_plan import plan, put, sole_mask
from plugrad.plugins._rules import along_axis_key, device_of
from plugrad.plugins._scatter import scatter_add_generic, scatter_add_numpy

# The rows are aligned by hand, one op per statement.
# fmt: off


def _complete(key: Any) -> tuple[Any, ...]:
    """``key`` as a tuple; a basic key (no arrays) ends with ``...``, as the standard wants."""
    key = key if type(key) is tuple else (key,)
    if any(k is Ellipsis or hasattr(k, "shape") for k in key):
        return key
    return (*key, Ellipsis)


scatter_add = op("scatter_add", scatter_add_generic, kernels={"numpy": scatter_add_numpy},
                 vjp=lambda xp, g, ans, values, *, key, shape: xp.getitem(g, key=key),
                 broadcasting=True, saves=(), array_params=("key",), standard=False,
                 doc="Zeros of ``shape`` with ``values`` added at ``[key]``; repeats add up.")


def _positive_basic(key: tuple[Any, ...]) -> bool:
    """Whether ``key`` has no arrays and no negative steps: every library indexes it alike."""
    for k in key:
        if type(k) is slice:
            if k.step is not None and k.step < 0:
                return False
        elif hasattr(k, "shape"):
            return False
    return True


def _getitem_generic(xp: Any, x: Any, /, key: Any) -> Any:
    key = key if type(key) is tuple else (key,)
    if _positive_basic(key):
        try:
            return x[_complete(key)]
        except IndexError:
            pass  # e.g. slice bounds past the end, which array-api-strict refuses; plan() clips
    mask = sole_mask(xp, key, x.ndim)
    if mask is not None:
        return x[(mask,)]
    return plan(xp, tuple(x.shape), key, device_of(x)).gather(xp, x)


def _getitem_numpy_style(xp: Any, x: Any, /, key: Any) -> Any:
    # NumPy and CuPy index with every key the generic kernel rewrites, and faster.
    return x[_complete(key)]


getitem = op("getitem", _getitem_generic,
             kernels={"numpy": _getitem_numpy_style, "cupy": _getitem_numpy_style},
             vjp=lambda xp, g, ans, x, *, key: xp.scatter_add(g, key=key, shape=x.shape),
             saves=(), standard=False,
             doc="Index ``x[key]``; what ``Tensor.__getitem__`` calls (use ``x[key]`` instead).")


def _take_key(axis: int | None, ndim: int, indices: Any) -> tuple[Any, ...]:
    axis = 0 if axis is None else axis % ndim
    return (slice(None),) * axis + (indices,)


def _index_select(xp: Any, x: Any, dim: int, index: Any) -> Any:
    """PyTorch's ``x.index_select(dim, index)``: the slices at ``index`` (1-D) along ``dim``."""
    return xp.take(x, index, axis=dim)


take = op("take(x, indices, /, *, axis=None)", saves=("indices",),
          vjp=(lambda xp, g, ans, x, indices, *, axis: xp.scatter_add(
                   g, key=_take_key(axis, x.ndim, indices), shape=x.shape), None),
          methods={"index_select": _index_select},
          doc="Take elements of ``x`` along ``axis`` at integer ``indices``; repeats add up.")


def _gather(xp: Any, x: Any, dim: int, index: Any) -> Any:
    """PyTorch's ``x.gather(dim, index)``: ``out[..., i, ...] = x[..., index[..., i, ...], ...]``.

    ``index`` has ``x``'s number of dimensions and, off ``dim``, sizes up to ``x``'s.
    """
    dim = dim % x.ndim if x.ndim else 0
    if any(n != m for d, (n, m) in enumerate(zip(index.shape, x.shape)) if d != dim):
        # NOTE: take_along_axis broadcasts, where PyTorch reads the leading part of x.
        x = x[tuple(slice(None) if d == dim else slice(0, n) for d, n in enumerate(index.shape))]
    return xp.take_along_axis(x, index, axis=dim)


take_along_axis = op("take_along_axis(x, indices, /, *, axis=-1)", saves=("indices",),
                     vjp=(lambda xp, g, ans, x, indices, *, axis: xp.scatter_add(
                              g, key=along_axis_key(xp, indices, axis, tuple(g.shape),
                                                    tuple(x.shape)), shape=x.shape), None),
                     methods={"gather": _gather}, aliases={"gather": _gather},
                     doc="Pick from ``x`` along ``axis`` with ``indices`` of as many dimensions.")


def _setitem_generic(xp: Any, x: Any, value: Any, /, key: Any) -> Any:
    key = key if type(key) is tuple else (key,)
    mask = sole_mask(xp, key, x.ndim)
    if mask is not None:
        return put(xp.asarray(x, copy=True), (mask,), value)
    return plan(xp, tuple(x.shape), key, device_of(x)).assign(xp, x, value)


def _setitem_numpy_style(xp: Any, x: Any, value: Any, /, key: Any) -> Any:
    out = xp.asarray(x, copy=True)
    out[_complete(key)] = value
    return out


def _scattered(xp: Any, dim: int, index: Any, src: Any) -> tuple[tuple[Any, ...], Any]:
    """The key of PyTorch's ``scatter`` along ``dim`` at ``index``, and the values it writes."""
    key = along_axis_key(xp, index, dim, tuple(index.shape), tuple(index.shape))
    if hasattr(src, "shape") and src.ndim:
        # As in PyTorch, only the leading part of src that index covers is written.
        src = src[tuple(slice(0, n) for n in index.shape)]
    return key, src


def _scatter(xp: Any, x: Any, dim: int, index: Any, src: Any = None, *, value: Any = None) -> Any:
    """PyTorch's ``x.scatter(dim, index, src)``: ``out[..., index[i], ...] = src[i]`` along ``dim``.

    ``src`` is a tensor (its leading part of ``index``'s shape is written) or a
    number (also given as ``value=``). Where ``index`` repeats a position, one
    of the values written there is kept.
    """
    if (src is None) == (value is None):
        raise TypeError("scatter() takes src (a tensor or a number) or value=, exactly one")
    key, values = _scattered(xp, dim, index, value if src is None else src)
    return xp.setitem(x, values, key=key)


def _scatter_add(xp: Any, x: Any, dim: int, index: Any, src: Any) -> Any:
    """PyTorch's ``x.scatter_add(dim, index, src)``: ``src`` added at ``index`` along ``dim``.

    Values sent to one position add up.
    """
    key, values = _scattered(xp, dim, index, src)
    return x + xp.scatter_add(values, key=key, shape=tuple(x.shape))


def _narrow(xp: Any, x: Any, dim: int, start: Any, length: int) -> Any:
    """PyTorch's ``x.narrow(dim, start, length)``: ``length`` elements along ``dim``."""
    size = x.shape[dim]
    start = int(start)
    first = start + size if start < 0 else start
    if not 0 <= first <= size or length < 0 or first + length > size:
        raise IndexError(
            f"narrow(): start {start} and length {length} do not fit in dimension {dim} "
            f"of length {size}"
        )
    return x[(slice(None),) * (dim % x.ndim) + (slice(first, first + length),)]


def _masked_select(xp: Any, x: Any, mask: Any) -> Any:
    """PyTorch's ``x.masked_select(mask)``: the 1-D tensor of the elements where ``mask`` holds.

    ``x`` and ``mask`` broadcast against each other.
    """
    x, mask = xp.broadcast_arrays(x, mask)
    return x[mask]


setitem = op("setitem", _setitem_generic,
             kernels={"numpy": _setitem_numpy_style, "cupy": _setitem_numpy_style},
             vjp=(lambda xp, g, ans, x, value, *, key: xp.setitem(g, 0.0, key=key),
                  lambda xp, g, ans, x, value, *, key: xp.getitem(g, key=key)),
             broadcasting=True, saves=(), array_params=("key",), standard=False,
             methods={"scatter": _scatter, "scatter_add": _scatter_add, "narrow": _narrow,
                      "masked_select": _masked_select},
             inplace=("scatter", "scatter_add"),
             doc="A copy of ``x`` with ``x[key] = value``; what ``x[key] = value`` records.")


# fmt: on


@hookimpl
def plugrad_ops() -> list[OpDef]:
    return collect_ops(globals())
