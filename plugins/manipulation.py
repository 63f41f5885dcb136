"""Manipulation functions of the Array API: shapes and axes."""

from __future__ import annotations

from typing import Any

from plugrad.hookspecs import hookimpl
from plugrad.opdef import OpDef, op
from plugrad.plugins._rules import axis_slice


def _back_to_input_shape(xp: Any, g: Any, ans: Any, x: Any, *args: Any, **params: Any) -> Any:
    """Backward of ops that only change the shape, never the order of elements."""
    return xp.reshape(g, x.shape)


def _inverse_permutation(axes: tuple[int, ...]) -> tuple[int, ...]:
    ndim = len(axes)
    inverse = [0] * ndim
    for position, axis in enumerate(axes):
        inverse[axis % ndim] = position
    return tuple(inverse)


reshape = op(
    "reshape",
    lambda xp, x, /, shape, *, copy=None: xp.reshape(x, shape, copy=copy),
    saves=(),
    view=True,
    doc="""Give the elements of ``x`` a new ``shape`` (one entry may be -1).

    Examples
    --------
    >>> import plugrad
    >>> plugrad.reshape(plugrad.arange(6), (2, 3))
    tensor([[0, 1, 2],
            [3, 4, 5]])
    """,
).vjp(_back_to_input_shape)

permute_dims = op(
    "permute_dims",
    lambda xp, x, /, axes: xp.permute_dims(x, axes),
    saves=(),
    view=True,
    grad_fn_name="Permute",
    doc="""Reorder the axes of ``x``: axis ``i`` of the result is axis ``axes[i]`` of ``x``.

    Negative entries count from the end.

    Examples
    --------
    >>> import plugrad
    >>> plugrad.permute_dims(plugrad.zeros((2, 3, 4)), (2, 0, 1)).shape
    (4, 2, 3)
    """,
).vjp(lambda xp, g, ans, x, axes: xp.permute_dims(g, _inverse_permutation(axes)))

expand_dims = op(
    "expand_dims",
    lambda xp, x, /, axis=0: xp.expand_dims(x, axis=axis),
    methods=("expand_dims", "unsqueeze"),
    saves=(),
    view=True,
    doc="""Insert a size-1 axis at position ``axis`` (an int, or a tuple of positions).

    Examples
    --------
    >>> import plugrad
    >>> plugrad.expand_dims(plugrad.zeros((2, 3)), axis=1).shape
    (2, 1, 3)
    """,
).vjp(_back_to_input_shape)

squeeze = op(
    "squeeze",
    lambda xp, x, /, axis: xp.squeeze(x, axis=axis),
    methods="squeeze",
    saves=(),
    view=True,
    doc="""Remove the size-1 axes named by ``axis``.

    Examples
    --------
    >>> import plugrad
    >>> plugrad.squeeze(plugrad.zeros((2, 1, 3)), axis=1).shape
    (2, 3)
    """,
).vjp(_back_to_input_shape)

broadcast_to = op(
    "broadcast_to",
    lambda xp, x, /, shape: xp.broadcast_to(x, shape),
    methods="broadcast_to",
    broadcasting=True,
    saves=(),
    view=True,
    doc="""Broadcast ``x`` to ``shape``; the gradient is summed back over the broadcast axes.

    Examples
    --------
    >>> import plugrad
    >>> plugrad.broadcast_to(plugrad.tensor([1.0, 2.0]), (2, 2))
    tensor([[1., 2.],
            [1., 2.]])
    """,
).vjp(lambda xp, g, ans, x, shape: g)


def _roll_grad(xp: Any, g: Any, ans: Any, x: Any, *, shift: Any, axis: Any) -> Any:
    back = tuple(-s for s in shift) if isinstance(shift, tuple) else -shift
    return xp.roll(g, shift=back, axis=axis)


flip = op(
    "flip",
    lambda xp, x, /, *, axis=None: xp.flip(x, axis=axis),
    methods="flip",
    view=True,
    saves=(),
    doc="""Reverse the order of elements along ``axis`` (all axes by default).

    Examples
    --------
    >>> import plugrad
    >>> plugrad.flip(plugrad.tensor([[1.0, 2.0], [3.0, 4.0]]), axis=1)
    tensor([[2., 1.],
            [4., 3.]])
    """,
).vjp(lambda xp, g, ans, x, *, axis: xp.flip(g, axis=axis))

roll = op(
    "roll",
    lambda xp, x, /, shift, *, axis=None: xp.roll(x, shift=shift, axis=axis),
    methods="roll",
    saves=(),
    doc="""Shift elements cyclically by ``shift`` along ``axis`` (the flattened tensor by default).

    Examples
    --------
    >>> import plugrad
    >>> plugrad.roll(plugrad.tensor([1.0, 2.0, 3.0]), 1)
    tensor([3., 1., 2.])
    """,
).vjp(_roll_grad)


def _concat_grad(xp: Any, g: Any, ans: Any, arrays: tuple[Any, ...], *, axis: int | None):
    grads = []
    start = 0
    for a in arrays:
        if axis is None:
            size = 1
            for n in a.shape:
                size *= n
            grads.append(xp.reshape(g[start : start + size], a.shape))
            start += size
        else:
            stop = start + a.shape[axis]
            grads.append(g[axis_slice(g.ndim, axis, start, stop)])
            start = stop
    return grads


concat = op(
    "concat",
    lambda xp, arrays, /, *, axis=0: xp.concat(arrays, axis=axis),
    aliases=("cat", "concatenate"),
    sequence=True,
    saves=(),
    doc="""Join a list of tensors along an existing ``axis`` (flattened first if ``axis=None``).

    Examples
    --------
    >>> import plugrad
    >>> plugrad.concat([plugrad.tensor([1.0]), plugrad.tensor([2.0, 3.0])])
    tensor([1., 2., 3.])
    """,
).vjp(_concat_grad)

stack = op(
    "stack",
    lambda xp, arrays, /, *, axis=0: xp.stack(arrays, axis=axis),
    sequence=True,
    saves=(),
    doc="""Join a list of tensors of one shape along a new ``axis``.

    Examples
    --------
    >>> import plugrad
    >>> plugrad.stack([plugrad.tensor([1.0, 2.0]), plugrad.tensor([3.0, 4.0])], axis=1)
    tensor([[1., 3.],
            [2., 4.]])
    """,
).vjp(lambda xp, g, ans, arrays, *, axis: xp.unstack(g, axis=axis))

unstack = op(
    "unstack",
    lambda xp, x, /, *, axis=0: tuple(xp.unstack(x, axis=axis)),
    methods=("unstack", "unbind"),
    aliases="unbind",
    multiple_outputs=True,
    view=True,
    saves=(),
    doc="""Split ``x`` along ``axis`` into a tuple of tensors with that axis removed.

    Outputs left out of the loss contribute zero gradient.

    Examples
    --------
    >>> import plugrad
    >>> a, b = plugrad.unstack(plugrad.tensor([[1.0, 2.0], [3.0, 4.0]]))
    >>> b
    tensor([3., 4.])
    """,
).vjp(lambda xp, g, ans, x, *, axis: xp.stack(g, axis=axis))

moveaxis = op(
    "moveaxis",
    lambda xp, x, source, destination, /: xp.moveaxis(x, source, destination),
    methods=("moveaxis", "movedim"),
    aliases="movedim",
    inputs=("x",),
    view=True,
    saves=(),
    doc="""Move the axes ``source`` to positions ``destination`` (ints or tuples of ints).

    Examples
    --------
    >>> import plugrad
    >>> plugrad.moveaxis(plugrad.zeros((2, 3, 4)), 0, -1).shape
    (3, 4, 2)
    """,
).vjp(lambda xp, g, ans, x, source, destination: xp.moveaxis(g, destination, source))


def _repeat_grad(xp: Any, g: Any, ans: Any, x: Any, *, repeats: Any, axis: int | None) -> Any:
    shape = tuple(x.shape)
    if axis is None:
        size = 1
        for n in shape:
            size *= n
        length, axis, target = size, 0, (size,)
    else:
        axis = axis % len(shape)
        length, target = shape[axis], shape
    # Which input position each output position along the axis copies; the copies'
    # gradients add up there.
    source = xp.repeat(xp.arange(length, device=g.device), repeats)
    key = (slice(None),) * axis + (source,)
    return xp.reshape(xp.scatter_add(g, key=key, shape=target), shape)


repeat = op(
    "repeat",
    lambda xp, x, /, repeats, *, axis=None: xp.repeat(x, repeats, axis=axis),
    methods="repeat_interleave",
    aliases="repeat_interleave",
    array_params=("repeats",),
    saves=(),
    doc="""Repeat each element ``repeats`` times (an int, or a tensor with one count per element).

    Along ``axis``, or over the flattened tensor by default.

    Examples
    --------
    >>> import plugrad
    >>> plugrad.repeat(plugrad.tensor([1.0, 2.0]), 2)
    tensor([1., 1., 2., 2.])
    >>> plugrad.repeat(plugrad.tensor([[1.0, 2.0]]), plugrad.tensor([1, 3]), axis=1)
    tensor([[1., 2., 2., 2.]])
    """,
).vjp(_repeat_grad)


def _tile_grad(xp: Any, g: Any, ans: Any, x: Any, *, repetitions: tuple[int, ...]) -> Any:
    shape = tuple(x.shape)
    ndim = max(len(shape), len(repetitions))
    padded = (1,) * (ndim - len(shape)) + shape
    reps = (1,) * (ndim - len(repetitions)) + tuple(repetitions)
    # The output is reps[i] copies of the input along each axis i: view it as
    # (reps[0], padded[0], reps[1], padded[1], ...) and sum over the copies.
    split = tuple(n for pair in zip(reps, padded) for n in pair)
    summed = xp.sum(xp.reshape(g, split), axis=tuple(range(0, 2 * ndim, 2)))
    return xp.reshape(summed, shape)


tile = op(
    "tile",
    lambda xp, x, /, repetitions: xp.tile(x, repetitions),
    methods="tile",
    saves=(),
    doc="""Repeat the whole tensor ``repetitions[i]`` times along each axis ``i``.

    Examples
    --------
    >>> import plugrad
    >>> plugrad.tile(plugrad.tensor([1.0, 2.0]), (2, 2))
    tensor([[1., 2., 1., 2.],
            [1., 2., 1., 2.]])
    """,
).vjp(_tile_grad)

broadcast_arrays = op(
    "broadcast_arrays",
    lambda xp, *arrays: tuple(xp.broadcast_arrays(*arrays)),
    multiple_outputs=True,
    view=True,
    broadcasting=True,
    saves=(),
    doc="""Broadcast tensors against each other; returns a tuple of tensors of one shape.

    Examples
    --------
    >>> import plugrad
    >>> a, b = plugrad.broadcast_arrays(plugrad.tensor([1.0, 2.0]), plugrad.tensor([[3.0], [4.0]]))
    >>> a
    tensor([[1., 2.],
            [1., 2.]])
    """,
).vjp(lambda xp, g, ans, arrays: g)


@hookimpl
def plugrad_ops() -> list[OpDef]:
    return [
        reshape, permute_dims, expand_dims, squeeze, broadcast_to, flip, roll, concat, stack,
        unstack, moveaxis, repeat, tile, broadcast_arrays,
    ]  # fmt: skip
