"""Recurrent layers: ``RNN``, ``LSTM`` and ``GRU``, and the cells that take one step of them.

The layers have PyTorch's constructors, parameter names, shapes, gate order
and initialization, so a PyTorch ``state_dict`` (converted to arrays) loads
into them and gives the same outputs. They are composed of plugrad's
differentiable ops -- one matrix product per layer and direction for the
input of every time step, then one per step for the recurrence -- so
gradients of any order work on every backend.

A :class:`~plugrad.nn.utils.rnn.PackedSequence` input runs each sequence over its
own length only: its states stop at its last element (the final states are those)
and a reversed direction starts there; the output is packed as the input.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from .. import autocast_mode as _autocast
from .. import ops as _ops
from ..creation import asarray, empty, zeros
from ..errors import (
    ArgumentError,
    DtypeError,
    InvalidArgumentError,
    NotSupportedError,
    ShapeError,
    checked_bool,
)
from ..tensor import Tensor
from . import functional as F
from . import init
from .functional import _how_to_match, _positive_int
from .module import Module, ParameterPlacement, check_placement, with_placement
from .parameter import Parameter
from .utils.rnn import PackedSequence, packed_like, padded_from_packed

if TYPE_CHECKING:
    from typing_extensions import Unpack

__all__ = ["GRU", "LSTM", "RNN", "GRUCell", "LSTMCell", "RNNBase", "RNNCell", "RNNCellBase"]

#: Gates per mode: the rows of ``weight_ih`` and ``weight_hh`` are this many blocks of
#: ``hidden_size``, in PyTorch's order (LSTM: i, f, g, o; GRU: r, z, n).
_GATES = {"RNN_TANH": 1, "RNN_RELU": 1, "LSTM": 4, "GRU": 3}
_NONLINEARITIES = {"tanh": "RNN_TANH", "relu": "RNN_RELU"}
#: The layers' names in the autocast policies.
_AUTOCAST_NAMES = {"RNN_TANH": "nn.RNN", "RNN_RELU": "nn.RNN", "LSTM": "nn.LSTM", "GRU": "nn.GRU"}


# -- checks -------------------------------------------------------------------------------


def _check_arguments(
    module: Module, placement: Any, sizes: dict[str, Any], flags: dict[str, Any]
) -> None:
    """Check a constructor's ``placement`` keywords, ``sizes`` (positive ints) and ``flags``
    (bools), in this order."""
    layer = type(module).__name__
    check_placement(module, placement)
    for name, value in sizes.items():
        _positive_int(layer, name, value)
    for name, flag in flags.items():
        checked_bool(f"{layer}: {name}", flag)


def _nonlinearity_mode(layer: str, nonlinearity: Any) -> str:
    try:
        return _NONLINEARITIES[nonlinearity]
    except (KeyError, TypeError):
        raise InvalidArgumentError(
            f"{layer}: unknown nonlinearity {nonlinearity!r}; select 'tanh' or 'relu'"
        ) from None


def _check_input(
    layer: str, input: Any, weight: Tensor, input_size: int, ndims: tuple[int, int]
) -> None:
    """Refuse what is not an unbatched or batched (``ndims``) tensor of the weight's dtype
    with ``input_size`` features."""
    if not isinstance(input, Tensor):
        takes = "a Tensor or a PackedSequence" if ndims[0] == 2 else "a Tensor (one step)"
        hint = ""
        if isinstance(input, PackedSequence):
            hint = f"; a cell takes one step: run {layer.removesuffix('Cell')} over sequences"
        raise ArgumentError(f"{layer}: the input must be {takes}, got {type(input).__name__}{hint}")
    if input.ndim not in ndims:
        raise ShapeError(
            f"{layer}: expected a {ndims[0]}-d (unbatched) or {ndims[1]}-d input, "
            f"got shape {input.shape}"
        )
    if input.shape[-1] != input_size:
        raise ShapeError(
            f"{layer}: expected input_size={input_size} features on the input's last axis, "
            f"got shape {input.shape}"
        )
    if input.dtype is not weight.dtype:
        raise DtypeError(
            f"{layer}: the input is {input.dtype.name} but the weights are {weight.dtype.name}. "
            + _how_to_match(input.dtype, weight.dtype)
        )


def _check_state(
    layer: str, name: str, state: Any, shape: tuple[int, ...], input: Tensor
) -> Tensor:
    """``state`` if it is a tensor of ``shape`` and of the input's dtype."""
    if not isinstance(state, Tensor):
        raise ArgumentError(f"{layer}: {name} must be a Tensor, got {type(state).__name__}")
    if state.shape != shape:
        raise ShapeError(f"{layer}: expected {name} of shape {shape}, got {state.shape}")
    if state.dtype is not input.dtype:
        raise DtypeError(
            f"{layer}: {name} is {state.dtype.name} but the input is {input.dtype.name}; "
            "give both the dtype of the module's weights"
        )
    return state


def _initial_states(
    layer: str,
    input: Tensor,
    states: tuple[Any, ...],
    names: Sequence[str],
    shapes: Sequence[tuple[int, ...]],
    batched: bool,
    axis: int,
) -> list[Tensor]:
    """``states`` checked, each against its ``shapes`` entry without the batch ``axis`` if the
    input had none, and given that axis; zeros of ``shapes`` for those that are None."""
    prepared = []
    for name, state, shape in zip(names, states, shapes):
        if state is None:
            prepared.append(zeros(shape, dtype=input.dtype, device=input.device))
            continue
        expected = shape if batched else shape[:axis] + shape[axis + 1 :]
        state = _check_state(layer, name, state, expected, input)
        prepared.append(state if batched else state.unsqueeze(axis))
    return prepared


def _state_pair(layer: str, hx: Any) -> tuple[Any, Any]:
    if not isinstance(hx, tuple | list) or len(hx) != 2:
        raise ArgumentError(f"{layer}: hx must be a pair (h_0, c_0) of Tensors, got {hx!r:.80}")
    return hx[0], hx[1]


def _refuse_projection(layer: str, placement: Any) -> None:
    """Refuse a ``proj_size`` given to RNN or GRU (it reaches their ``**placement``)."""
    if "proj_size" in placement:
        raise InvalidArgumentError(f"{layer}: proj_size is only supported by LSTM, not {layer}")


def _reset_uniform(module: Module, hidden_size: int) -> None:
    """Every parameter of ``module`` from ``U(-1/sqrt(hidden_size), 1/sqrt(hidden_size))``."""
    bound = 1.0 / math.sqrt(hidden_size)
    for parameter in module.parameters():
        init.uniform_(parameter, -bound, bound)


def _add_parameter(module: Module, name: str, shape: tuple[int, ...], placement: Any) -> None:
    setattr(module, name, Parameter(empty(shape, **placement)))


# -- one time step ------------------------------------------------------------------------
#
# ``gi`` is the input's share of the gates, ``x @ weight_ih.T + bias_ih``; ``bias`` is
# ``bias_hh``, or None when the caller has already added it to ``gi`` (as the layers do for
# RNN and LSTM, once for every step).


def _recurrent(h: Tensor, weight_hh: Tensor, bias: Tensor | None) -> Tensor:
    out = _ops.linear(h, weight_hh)
    return out if bias is None else out + bias


def _rnn_tanh_step(gi: Tensor, h: Tensor, weight_hh: Tensor, bias: Tensor | None) -> Tensor:
    return _ops.tanh(gi + _recurrent(h, weight_hh, bias))


def _rnn_relu_step(gi: Tensor, h: Tensor, weight_hh: Tensor, bias: Tensor | None) -> Tensor:
    return _ops.relu(gi + _recurrent(h, weight_hh, bias))


def _gru_step(gi: Tensor, h: Tensor, weight_hh: Tensor, bias: Tensor | None) -> Tensor:
    i_r, i_z, i_n = _ops.chunk(gi, 3, -1)
    h_r, h_z, h_n = _ops.chunk(_recurrent(h, weight_hh, bias), 3, -1)
    r = _ops.sigmoid(i_r + h_r)
    z = _ops.sigmoid(i_z + h_z)
    n = _ops.tanh(i_n + r * h_n)  # bias_hh's n part is inside r * (...), so never folded
    return n + z * (h - n)


def _lstm_step(
    gi: Tensor,
    h: Tensor,
    c: Tensor,
    weight_hh: Tensor,
    bias: Tensor | None,
    weight_hr: Tensor | None,
) -> tuple[Tensor, Tensor]:
    i, f, g, o = _ops.chunk(gi + _recurrent(h, weight_hh, bias), 4, -1)
    c = _ops.sigmoid(f) * c + _ops.sigmoid(i) * _ops.tanh(g)
    h = _ops.sigmoid(o) * _ops.tanh(c)
    return (h if weight_hr is None else _ops.linear(h, weight_hr)), c


_STEPS: dict[str, Callable[[Tensor, Tensor, Tensor, Tensor | None], Tensor]] = {
    "RNN_TANH": _rnn_tanh_step,
    "RNN_RELU": _rnn_relu_step,
    "GRU": _gru_step,
}


def _input_gates(input: Tensor, weight_ih: Tensor, bias_ih: Tensor | None) -> Tensor:
    gi = _ops.linear(input, weight_ih)
    return gi if bias_ih is None else gi + bias_ih


# -- PyTorch's top-level cell functions (torch.rnn_tanh_cell, ...): one step, the weights given


@_autocast.listed("rnn_tanh_cell")
def rnn_tanh_cell(
    input: Tensor,
    hx: Tensor,
    w_ih: Tensor,
    w_hh: Tensor,
    b_ih: Tensor | None = None,
    b_hh: Tensor | None = None,
) -> Tensor:
    """One Elman RNN step: ``tanh(input @ w_ih.T + b_ih + hx @ w_hh.T + b_hh)``.

    Examples
    --------
    >>> import plugrad
    >>> w = plugrad.zeros(1, 1)
    >>> plugrad.rnn_tanh_cell(plugrad.ones(1, 1), plugrad.ones(1, 1), w, w)
    tensor([[0.]])
    """
    return _rnn_tanh_step(_input_gates(input, w_ih, b_ih), hx, w_hh, b_hh)


@_autocast.listed("rnn_relu_cell")
def rnn_relu_cell(
    input: Tensor,
    hx: Tensor,
    w_ih: Tensor,
    w_hh: Tensor,
    b_ih: Tensor | None = None,
    b_hh: Tensor | None = None,
) -> Tensor:
    """One Elman RNN step with ReLU: ``relu(input @ w_ih.T + b_ih + hx @ w_hh.T + b_hh)``.

    Examples
    --------
    >>> import plugrad
    >>> w = -plugrad.ones(1, 1)
    >>> plugrad.rnn_relu_cell(plugrad.ones(1, 1), plugrad.ones(1, 1), w, w)
    tensor([[0.]])
    """
    return _rnn_relu_step(_input_gates(input, w_ih, b_ih), hx, w_hh, b_hh)


@_autocast.listed("lstm_cell")
def lstm_cell(
    input: Tensor,
    hx: Sequence[Tensor],
    w_ih: Tensor,
    w_hh: Tensor,
    b_ih: Tensor | None = None,
    b_hh: Tensor | None = None,
) -> tuple[Tensor, Tensor]:
    """One LSTM step; ``hx`` is ``(h, c)`` and the gates come in PyTorch's order (i, f, g, o).

    Returns ``(h', c')``.

    Examples
    --------
    >>> import plugrad
    >>> h, c = plugrad.lstm_cell(
    ...     plugrad.ones(1, 1), [plugrad.zeros(1, 1)] * 2, plugrad.zeros(4, 1), plugrad.zeros(4, 1)
    ... )
    >>> h, c
    (tensor([[0.]]), tensor([[0.]]))
    """
    if len(hx) != 2:
        raise InvalidArgumentError(
            f"lstm_cell(): hx must be the pair (h, c), got {len(hx)} tensors"
        )
    h, c = hx
    return _lstm_step(_input_gates(input, w_ih, b_ih), h, c, w_hh, b_hh, None)


@_autocast.listed("gru_cell")
def gru_cell(
    input: Tensor,
    hx: Tensor,
    w_ih: Tensor,
    w_hh: Tensor,
    b_ih: Tensor | None = None,
    b_hh: Tensor | None = None,
) -> Tensor:
    """One GRU step, the gates in PyTorch's order (reset, update, new).

    Examples
    --------
    >>> import plugrad
    >>> w = plugrad.zeros(3, 1)
    >>> plugrad.gru_cell(plugrad.ones(1, 1), plugrad.ones(1, 1), w, w)
    tensor([[0.5000]])
    """
    return _gru_step(_input_gates(input, w_ih, b_ih), hx, w_hh, b_hh)


# -- layers over sequences ----------------------------------------------------------------


class RNNBase(Module):
    """What :class:`RNN`, :class:`LSTM` and :class:`GRU` share: their parameters, checks
    and the loop over layers, directions and time steps.

    ``mode`` is ``"RNN_TANH"``, ``"RNN_RELU"``, ``"LSTM"`` or ``"GRU"``; the other
    arguments are those of the layers.
    """

    @with_placement
    def __init__(
        self,
        mode: str,
        input_size: int,
        hidden_size: int,
        num_layers: int = 1,
        bias: bool = True,
        batch_first: bool = False,
        dropout: float = 0.0,
        bidirectional: bool = False,
        proj_size: int = 0,
        **placement: Unpack[ParameterPlacement],
    ) -> None:
        super().__init__()
        layer = type(self).__name__
        if mode not in _GATES:
            raise InvalidArgumentError(
                f"RNNBase: unknown mode {mode!r}; known: {', '.join(_GATES)}"
            )
        sizes = {"input_size": input_size, "hidden_size": hidden_size, "num_layers": num_layers}
        flags = {"bias": bias, "batch_first": batch_first, "bidirectional": bidirectional}
        _check_arguments(self, placement, sizes, flags)
        if (
            not isinstance(dropout, int | float)
            or isinstance(dropout, bool)
            or not 0 <= dropout <= 1
        ):
            raise InvalidArgumentError(
                f"{layer}: dropout must be a probability between 0 and 1 (of zeroing an "
                f"element), got {dropout!r}"
            )
        if not isinstance(proj_size, int) or isinstance(proj_size, bool) or proj_size < 0:
            raise InvalidArgumentError(
                f"{layer}: proj_size must be a non-negative int (0: no projection), "
                f"got {proj_size!r}"
            )
        if proj_size >= hidden_size:
            raise InvalidArgumentError(
                f"{layer}: proj_size={proj_size} must be smaller than hidden_size={hidden_size}"
            )
        if dropout > 0 and num_layers == 1:
            warnings.warn(
                f"{layer}: dropout is applied between stacked layers, so dropout={dropout} "
                f"does nothing with num_layers=1",
                stacklevel=3,
            )
        self.mode = mode
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.num_layers = num_layers
        self.bias = bias
        self.batch_first = batch_first
        self.dropout = float(dropout)
        self.bidirectional = bidirectional
        self.proj_size = proj_size
        gate_size = _GATES[mode] * hidden_size
        output_size = proj_size or hidden_size
        directions = 2 if bidirectional else 1
        self._all_weights: list[list[str]] = []
        for index in range(num_layers):
            layer_input_size = input_size if index == 0 else output_size * directions
            for suffix in ("", "_reverse")[:directions]:
                shapes: dict[str, tuple[int, ...]] = {
                    "weight_ih": (gate_size, layer_input_size),
                    "weight_hh": (gate_size, output_size),
                }
                if bias:
                    shapes.update(bias_ih=(gate_size,), bias_hh=(gate_size,))
                if proj_size:
                    shapes["weight_hr"] = (proj_size, hidden_size)
                names = []
                for kind, shape in shapes.items():
                    names.append(f"{kind}_l{index}{suffix}")
                    _add_parameter(self, names[-1], shape, placement)
                self._all_weights.append(names)
        self.reset_parameters()

    @property
    def _flat_weights_names(self) -> list[str]:
        return [name for names in self._all_weights for name in names]

    @property
    def _flat_weights(self) -> list[Tensor | None]:
        """The tensors named by ``_flat_weights_names``, in that order (None for one deleted):
        read at each access, so an assigned or parametrized weight is the one listed."""
        return [getattr(self, name, None) for name in self._flat_weights_names]

    @_flat_weights.setter
    def _flat_weights(self, value: Any) -> None:
        raise NotSupportedError(
            f"{type(self).__name__}._flat_weights cannot be assigned: plugrad's layers read "
            "their weights by name, so a list assigned here would not be used. Assign the "
            "weights themselves (rnn.weight_hh_l0 = ...), or parametrize them"
        )

    @property
    def all_weights(self) -> list[list[Parameter]]:
        """The parameters of each layer and direction, in PyTorch's order."""
        return [[getattr(self, name) for name in names] for names in self._all_weights]

    def check_input(self, input: Tensor, batch_sizes: Tensor | None) -> None:
        """Refuse an input that is not time-first and batched as PyTorch's ``forward`` checks it.

        Parameters
        ----------
        input : Tensor
            ``(L, N, input_size)`` (batch first with ``batch_first``), or the
            ``(elements, input_size)`` data of a packed sequence.
        batch_sizes : Tensor or None
            The packed sequence's batch sizes, None for a padded input.

        Raises
        ------
        DtypeError
            If the input's dtype is not the weights'.
        ShapeError
            If it is not 3-d (2-d with ``batch_sizes``), or its last size is not
            ``input_size``.

        Examples
        --------
        >>> import plugrad
        >>> rnn = plugrad.nn.RNN(4, 8)
        >>> rnn.check_input(plugrad.zeros(5, 2, 4), None)
        >>> rnn.check_input(plugrad.zeros(5, 3), None)
        Traceback (most recent call last):
        ...
        plugrad.errors.ShapeError: RNN: input must have 3 dimensions, got 2
        """
        layer = type(self).__name__
        if not isinstance(input, Tensor):
            raise ArgumentError(f"{layer}: the input must be a Tensor, got {type(input).__name__}")
        weight = self._flat_weights[0]
        if weight is not None and input.dtype != weight.dtype:
            raise DtypeError(
                f"{layer}: the input is {input.dtype.name} but the weights are "
                f"{weight.dtype.name}. " + _how_to_match(input.dtype, weight.dtype)
            )
        ndim = 2 if batch_sizes is not None else 3
        if input.ndim != ndim:
            raise ShapeError(f"{layer}: input must have {ndim} dimensions, got {input.ndim}")
        if input.shape[-1] != self.input_size:
            raise ShapeError(
                f"{layer}: input.size(-1) must be equal to input_size. Expected "
                f"{self.input_size}, got {input.shape[-1]}"
            )

    def get_expected_hidden_size(
        self, input: Tensor, batch_sizes: Tensor | None
    ) -> tuple[int, int, int]:
        """The shape ``h_0`` must have for ``input``: ``(num_layers * D, N, H_out)``.

        ``N`` is ``batch_sizes[0]`` for a packed input, else the input's batch size
        (its first size with ``batch_first``, else its second); ``D`` is 2 if
        bidirectional, ``H_out`` ``proj_size`` or ``hidden_size``.

        Examples
        --------
        >>> import plugrad
        >>> gru = plugrad.nn.GRU(4, 8, num_layers=2, batch_first=True)
        >>> gru.get_expected_hidden_size(plugrad.zeros(3, 5, 4), None)
        (2, 3, 8)
        """
        if batch_sizes is not None:
            batch = int(batch_sizes[0])
        else:
            batch = input.shape[0] if self.batch_first else input.shape[1]
        directions = 2 if self.bidirectional else 1
        return (self.num_layers * directions, batch, self.proj_size or self.hidden_size)

    def check_hidden_size(
        self,
        hx: Tensor,
        expected_hidden_size: tuple[int, ...],
        msg: str = "Expected hidden size {}, got {}",
    ) -> None:
        """Refuse ``hx`` unless its shape is ``expected_hidden_size``.

        ``msg`` is formatted with the expected shape and ``hx``'s (as a list), as
        PyTorch's, for the :class:`~plugrad.errors.ShapeError`'s message.

        Examples
        --------
        >>> import plugrad
        >>> rnn = plugrad.nn.RNN(4, 8)
        >>> rnn.check_hidden_size(plugrad.zeros(1, 2, 7), (1, 2, 8))
        Traceback (most recent call last):
        ...
        plugrad.errors.ShapeError: RNN: Expected hidden size (1, 2, 8), got [1, 2, 7]
        """
        layer = type(self).__name__
        if not isinstance(hx, Tensor):
            raise ArgumentError(
                f"{layer}: the hidden state must be a Tensor, got {type(hx).__name__}"
            )
        if tuple(hx.shape) != tuple(expected_hidden_size):
            raise ShapeError(f"{layer}: " + msg.format(expected_hidden_size, list(hx.shape)))

    def check_forward_args(self, input: Tensor, hidden: Tensor, batch_sizes: Tensor | None) -> None:
        """:meth:`check_input`, then :meth:`check_hidden_size` of ``hidden`` against
        :meth:`get_expected_hidden_size` (for :class:`LSTM`, of the pair ``(h, c)``).

        Examples
        --------
        >>> import plugrad
        >>> rnn = plugrad.nn.RNN(4, 8, num_layers=2)
        >>> rnn.check_forward_args(plugrad.zeros(5, 3, 4), plugrad.zeros(2, 3, 8), None)
        """
        self.check_input(input, batch_sizes)
        self.check_hidden_size(hidden, self.get_expected_hidden_size(input, batch_sizes))

    def permute_hidden(self, hx: Tensor, permutation: Tensor | None) -> Tensor:
        """``hx`` with its batch (axis 1) reordered by ``permutation``; ``hx`` itself if None.

        Examples
        --------
        >>> import plugrad
        >>> rnn = plugrad.nn.RNN(1, 1)
        >>> h = plugrad.tensor([[[1.0], [2.0], [3.0]]])
        >>> rnn.permute_hidden(h, plugrad.tensor([2, 0, 1]))[0, :, 0]
        tensor([3., 1., 2.])
        """
        if permutation is None:
            return hx
        return _ops.index_select(hx, 1, permutation)

    def flatten_parameters(self) -> None:
        """Do nothing: the parameters are separate tensors on every backend (PyTorch packs
        them for cuDNN here)."""

    def reset_parameters(self) -> None:
        """Draw new initial values: every parameter from ``U(-1/sqrt(hidden_size),
        1/sqrt(hidden_size))``, as PyTorch does."""
        _reset_uniform(self, self.hidden_size)

    def _weights(
        self, index: int
    ) -> tuple[Tensor, Tensor, Tensor | None, Tensor | None, Tensor | None]:
        """``(weight_ih, weight_hh, bias_ih, bias_hh, weight_hr)`` of layer-and-direction
        ``index``, with None for what the layer does not have."""
        names = self._all_weights[index]
        w_ih, w_hh = getattr(self, names[0]), getattr(self, names[1])
        b_ih, b_hh = (getattr(self, name) for name in names[2:4]) if self.bias else (None, None)
        w_hr = getattr(self, names[-1]) if self.proj_size else None
        return w_ih, w_hh, b_ih, b_hh, w_hr

    def _prepare(
        self, input: Any, states: tuple[Any, ...]
    ) -> tuple[Tensor, list[Tensor], bool, list[int] | None]:
        """Check the call; return the input as ``(time, batch, features)``, the initial
        states as ``(layers * directions, batch, size)``, whether the input had a batch,
        and for a packed input the length of each sequence (the batch sorted by them)."""
        layer = type(self).__name__
        lengths = None
        if isinstance(input, PackedSequence):
            if not isinstance(input.data, Tensor) or input.data.ndim != 2:
                raise ShapeError(
                    f"{layer}: expected packed data of shape (elements, input_size), got "
                    f"{getattr(input.data, 'shape', type(input.data).__name__)}"
                )
            sorted_indices = input.sorted_indices
            input, lengths = padded_from_packed(input)
        _check_input(layer, input, self.weight_ih_l0, self.input_size, (2, 3))
        batched = input.ndim == 3
        if not batched:
            input = input.unsqueeze(1)
        elif self.batch_first and lengths is None:
            input = _ops.swapaxes(input, 0, 1)
        steps, batch = input.shape[0], input.shape[1]
        if steps == 0:
            raise ShapeError(f"{layer}: expected a sequence of at least one step, got none")
        depth = self.num_layers * (2 if self.bidirectional else 1)
        sizes = [self.proj_size or self.hidden_size, self.hidden_size]
        shapes = [(depth, batch, size) for size in sizes]
        names = ["h_0", "c_0"]
        initial = _initial_states(layer, input, states, names, shapes, batched, 1)
        if lengths is not None and sorted_indices is not None:
            # Given in the batch's own order, as the final states are returned.
            initial = [
                state if given is None else _ops.take(state, sorted_indices, axis=1)
                for state, given in zip(initial, states)
            ]
        return input, initial, batched, lengths

    def _scan(
        self,
        input: Tensor,
        index: int,
        h: Tensor,
        c: Tensor | None,
        reverse: bool,
        running: list[Tensor] | None,
        cast: Callable[[Tensor], Tensor] | None,
    ) -> tuple[Tensor, Tensor, Tensor | None]:
        """Run layer-and-direction ``index`` over ``input`` (time first) from ``h`` (and
        ``c``); return its outputs for every step, and its last ``h`` and ``c``.

        ``running[t]`` (packed inputs) says which sequences run at step ``t``: the others
        keep their state (before they start, reversed, and after they end). ``cast``: the
        weights' autocast (see :meth:`_run`)."""
        w_ih, w_hh, b_ih, b_hh, w_hr = self._weights(index)
        if cast is not None:
            w_ih, w_hh = cast(w_ih), cast(w_hh)
            b_ih, b_hh, w_hr = (None if w is None else cast(w) for w in (b_ih, b_hh, w_hr))
        if self.mode != "GRU" and b_ih is not None:
            b_ih, b_hh = b_ih + b_hh, None  # added once here instead of once per step
        gi = _ops.linear(input, w_ih)
        gates = _ops.unbind(gi if b_ih is None else gi + b_ih, axis=0)
        outputs: list[Any] = [None] * len(gates)
        times = range(len(gates) - 1, -1, -1) if reverse else range(len(gates))
        if c is None:
            step = _STEPS[self.mode]
            for t in times:
                new = step(gates[t], h, w_hh, b_hh)
                h = outputs[t] = new if running is None else _ops.where(running[t], new, h)
        else:
            for t in times:
                new, new_c = _lstm_step(gates[t], h, c, w_hh, b_hh, w_hr)
                if running is None:
                    h, c = new, new_c
                else:
                    h, c = _ops.where(running[t], new, h), _ops.where(running[t], new_c, c)
                outputs[t] = h
        return _ops.stack(outputs, axis=0), h, c

    def _run(self, input: Any, states: tuple[Any, ...]) -> tuple[Any, list[Tensor]]:
        """The output and the final states of ``forward``, in the input's layout.

        In an autocast region the input, states and weights are cast as PyTorch's CPU
        autocast casts its LSTM and RNN layers (lowered; its GRU layer is not listed)."""
        data = input.data if isinstance(input, PackedSequence) else input
        cast = _autocast.cast_for(_AUTOCAST_NAMES[self.mode], (data, *states))
        if cast is None:
            return self._run_cast(input, states, None)
        with _autocast.suspended():
            return self._run_cast(input, states, cast)

    def _run_cast(
        self, input: Any, states: tuple[Any, ...], cast: Callable[[Tensor], Tensor] | None
    ) -> tuple[Any, list[Tensor]]:
        packed = input if isinstance(input, PackedSequence) else None
        input, initial, batched, lengths = self._prepare(input, states)
        if cast is not None:
            input, initial = cast(input), [cast(state) for state in initial]
        running = None
        if lengths is not None:
            counts = asarray(lengths, device=input.device)[:, None]
            running = [counts > t for t in range(input.shape[0])]
        directions = 2 if self.bidirectional else 1
        finals: list[list[Tensor]] = [[] for _ in initial]
        for layer in range(self.num_layers):
            if layer > 0 and self.dropout > 0 and self.training:
                input = F.dropout(input, self.dropout, training=True)
            outputs = []
            for direction in range(directions):
                index = layer * directions + direction
                h0 = initial[0][index]
                c0 = initial[1][index] if len(initial) == 2 else None
                output, h, c = self._scan(input, index, h0, c0, direction == 1, running, cast)
                outputs.append(output)
                finals[0].append(h)
                if c is not None:
                    finals[1].append(c)
            input = outputs[0] if directions == 1 else _ops.concat(outputs, axis=-1)
        stacked = [_ops.stack(states, axis=0) for states in finals]
        if packed is not None:
            if packed.unsorted_indices is not None:
                stacked = [_ops.take(state, packed.unsorted_indices, axis=1) for state in stacked]
            return packed_like(packed, input), stacked
        output = input if batched else input.squeeze(1)
        if batched and self.batch_first:
            output = _ops.swapaxes(output, 0, 1)
        return output, stacked if batched else [state.squeeze(1) for state in stacked]

    def extra_repr(self) -> str:
        text = f"{self.input_size}, {self.hidden_size}"
        if self.proj_size != 0:
            text += f", proj_size={self.proj_size}"
        if self.num_layers != 1:
            text += f", num_layers={self.num_layers}"
        if self.bias is not True:
            text += f", bias={self.bias}"
        if self.batch_first is not False:
            text += f", batch_first={self.batch_first}"
        if self.dropout != 0:
            text += f", dropout={self.dropout}"
        if self.bidirectional is not False:
            text += f", bidirectional={self.bidirectional}"
        return text


class RNN(RNNBase):
    """An Elman recurrent network: ``h_t = tanh(x_t @ W_ih.T + b_ih + h_(t-1) @ W_hh.T + b_hh)``.

    With ``nonlinearity="relu"``, ReLU replaces tanh. Each of the ``num_layers``
    stacked layers takes the outputs of the one below; ``dropout`` zeroes them
    between layers in training mode.

    Parameters
    ----------
    input_size : int
        Features of each step of the input.
    hidden_size : int
        Features of the hidden state ``h``.
    num_layers : int
        Stacked recurrent layers.
    nonlinearity : {"tanh", "relu"}
    bias : bool
        Whether to learn ``bias_ih`` and ``bias_hh``.
    batch_first : bool
        Whether the input and output have the batch axis first (``h`` never has).
    dropout : float
        Probability of zeroing each output of a layer before the next one (training only).
    bidirectional : bool
        Whether each layer also reads the sequence backwards.
    device, dtype, backend : optional
        As for :class:`~plugrad.nn.Linear`.

    Notes
    -----
    ``forward(input, hx=None)`` returns ``(output, h_n)``; ``hx`` (``h_0``) is zeros
    if not given. With ``L`` the sequence length, ``N`` the batch, ``D`` 2 if
    bidirectional else 1, and ``H_out`` ``proj_size`` if set (:class:`LSTM`), else
    ``hidden_size``:

    - ``input``: ``(L, N, input_size)``, ``(N, L, input_size)`` if ``batch_first``, or
      ``(L, input_size)`` unbatched;
    - ``h_0`` and ``h_n``: ``(D * num_layers, N, H_out)``, or ``(D * num_layers, H_out)``
      unbatched (never batch first);
    - ``output``: ``(L, N, D * H_out)`` (batch first if ``batch_first``), or
      ``(L, D * H_out)`` unbatched: the last layer's ``h`` at every step, the two
      directions side by side.

    The parameters are named as in PyTorch; for layer ``k``: ``weight_ih_lk``
    ``(gates * hidden_size, input_size)`` (``D * H_out`` inputs above the first layer),
    ``weight_hh_lk`` ``(gates * hidden_size, H_out)``, ``bias_ih_lk`` and ``bias_hh_lk``
    ``(gates * hidden_size,)``, with the suffix ``_reverse`` for the backward direction
    (``gates`` is 1 here, 4 for :class:`LSTM`, 3 for :class:`GRU`). All are initialized
    from ``U(-1/sqrt(hidden_size), 1/sqrt(hidden_size))`` with plugrad's random
    generators (:func:`plugrad.manual_seed`).

    A :class:`~plugrad.nn.utils.rnn.PackedSequence` input (from
    :func:`~plugrad.nn.utils.rnn.pack_padded_sequence`) runs each sequence over its own
    length and gives a ``PackedSequence`` output, as in PyTorch.

    Examples
    --------
    >>> import plugrad
    >>> _ = plugrad.manual_seed(0)
    >>> rnn = plugrad.nn.RNN(10, 20, num_layers=2)
    >>> rnn
    RNN(10, 20, num_layers=2)
    >>> output, h_n = rnn(plugrad.randn(5, 3, 10))
    >>> output.shape, h_n.shape
    ((5, 3, 20), (2, 3, 20))
    """

    @with_placement
    def __init__(
        self,
        input_size: int,
        hidden_size: int,
        num_layers: int = 1,
        nonlinearity: str = "tanh",
        bias: bool = True,
        batch_first: bool = False,
        dropout: float = 0.0,
        bidirectional: bool = False,
        **placement: Unpack[ParameterPlacement],
    ) -> None:
        _refuse_projection("RNN", placement)
        mode = _nonlinearity_mode("RNN", nonlinearity)
        super().__init__(
            mode, input_size, hidden_size, num_layers, bias, batch_first, dropout,
            bidirectional, **placement,
        )  # fmt: skip
        self.nonlinearity = nonlinearity

    def forward(
        self, input: Tensor | PackedSequence, hx: Tensor | None = None
    ) -> tuple[Any, Tensor]:
        output, (h_n,) = self._run(input, (hx,))
        return output, h_n


class LSTM(RNNBase):
    """A long short-term memory network, with PyTorch's gates and optional projection.

    At each step, with ``i, f, g, o`` the four blocks of
    ``x_t @ W_ih.T + b_ih + h_(t-1) @ W_hh.T + b_hh`` (in this order)::

        c_t = sigmoid(f) * c_(t-1) + sigmoid(i) * tanh(g)
        h_t = sigmoid(o) * tanh(c_t)

    With ``proj_size > 0``, ``h_t`` is further multiplied by ``weight_hr_lk``
    ``(proj_size, hidden_size)``: ``h_t @ W_hr.T``, of ``proj_size`` features.

    Parameters
    ----------
    input_size, hidden_size, num_layers, bias, batch_first, dropout, bidirectional
        As for :class:`RNN`.
    proj_size : int
        Features of ``h`` after projection (0: no projection); below ``hidden_size``.
    device, dtype, backend : optional
        As for :class:`RNN`.

    Notes
    -----
    ``forward(input, hx=None)`` returns ``(output, (h_n, c_n))``; ``hx`` is the pair
    ``(h_0, c_0)``, zeros if not given. ``c_0`` and ``c_n`` have ``hidden_size``
    features, ``h_0`` and ``h_n`` ``H_out``. The other shapes and the parameter names are
    those of :class:`RNN`, and so are ``PackedSequence`` inputs.

    Examples
    --------
    >>> import plugrad
    >>> _ = plugrad.manual_seed(0)
    >>> lstm = plugrad.nn.LSTM(10, 20, batch_first=True, bidirectional=True)
    >>> lstm
    LSTM(10, 20, batch_first=True, bidirectional=True)
    >>> output, (h_n, c_n) = lstm(plugrad.randn(3, 5, 10))
    >>> output.shape, h_n.shape, c_n.shape
    ((3, 5, 40), (2, 3, 20), (2, 3, 20))
    >>> [name for name, _ in lstm.named_parameters()][:4]
    ['weight_ih_l0', 'weight_hh_l0', 'bias_ih_l0', 'bias_hh_l0']
    """

    @with_placement
    def __init__(
        self,
        input_size: int,
        hidden_size: int,
        num_layers: int = 1,
        bias: bool = True,
        batch_first: bool = False,
        dropout: float = 0.0,
        bidirectional: bool = False,
        proj_size: int = 0,
        **placement: Unpack[ParameterPlacement],
    ) -> None:
        super().__init__(
            "LSTM", input_size, hidden_size, num_layers, bias, batch_first, dropout,
            bidirectional, proj_size, **placement,
        )  # fmt: skip

    def forward(
        self, input: Tensor | PackedSequence, hx: tuple[Tensor, Tensor] | None = None
    ) -> tuple[Any, tuple[Tensor, Tensor]]:
        states = (None, None) if hx is None else _state_pair("LSTM", hx)
        output, (h_n, c_n) = self._run(input, states)
        return output, (h_n, c_n)

    def get_expected_cell_size(
        self, input: Tensor, batch_sizes: Tensor | None
    ) -> tuple[int, int, int]:
        """The shape ``c_0`` must have for ``input``: ``(num_layers * D, N, hidden_size)``
        (``h_0``'s, :meth:`get_expected_hidden_size`, with ``hidden_size`` for ``H_out``).

        Examples
        --------
        >>> import plugrad
        >>> lstm = plugrad.nn.LSTM(4, 8, proj_size=3)
        >>> lstm.get_expected_cell_size(plugrad.zeros(5, 2, 4), None)
        (1, 2, 8)
        """
        layers, batch, _ = self.get_expected_hidden_size(input, batch_sizes)
        return (layers, batch, self.hidden_size)

    def check_forward_args(  # type: ignore[override]
        self, input: Tensor, hidden: tuple[Tensor, Tensor], batch_sizes: Tensor | None
    ) -> None:
        """:meth:`check_input`, then the shapes of the pair ``hidden = (h, c)``.

        Examples
        --------
        >>> import plugrad
        >>> lstm = plugrad.nn.LSTM(4, 8)
        >>> x, h = plugrad.zeros(5, 3, 4), plugrad.zeros(1, 3, 8)
        >>> lstm.check_forward_args(x, (h, plugrad.zeros(1, 2, 8)), None)
        Traceback (most recent call last):
        ...
        plugrad.errors.ShapeError: LSTM: Expected hidden[1] size (1, 3, 8), got [1, 2, 8]
        """
        self.check_input(input, batch_sizes)
        h, c = _state_pair(type(self).__name__, hidden)
        expected = self.get_expected_hidden_size(input, batch_sizes)
        self.check_hidden_size(h, expected, "Expected hidden[0] size {}, got {}")
        expected = self.get_expected_cell_size(input, batch_sizes)
        self.check_hidden_size(c, expected, "Expected hidden[1] size {}, got {}")

    def permute_hidden(  # type: ignore[override]
        self, hx: tuple[Tensor, Tensor], permutation: Tensor | None
    ) -> tuple[Tensor, Tensor]:
        """The pair ``hx = (h, c)`` with the batch of each reordered by ``permutation``;
        ``hx`` itself if None.

        Examples
        --------
        >>> import plugrad
        >>> lstm = plugrad.nn.LSTM(1, 1)
        >>> h, c = plugrad.tensor([[[1.0], [2.0]]]), plugrad.tensor([[[3.0], [4.0]]])
        >>> h, c = lstm.permute_hidden((h, c), plugrad.tensor([1, 0]))
        >>> h[0, :, 0], c[0, :, 0]
        (tensor([2., 1.]), tensor([4., 3.]))
        """
        if permutation is None:
            return hx
        h, c = _state_pair(type(self).__name__, hx)
        return _ops.index_select(h, 1, permutation), _ops.index_select(c, 1, permutation)


class GRU(RNNBase):
    """A gated recurrent unit network, with PyTorch's gates.

    At each step, with ``r, z, n`` the three blocks of ``x_t @ W_ih.T + b_ih``
    (``i_r, i_z, i_n``) and of ``h_(t-1) @ W_hh.T + b_hh`` (``h_r, h_z, h_n``)::

        r = sigmoid(i_r + h_r)
        z = sigmoid(i_z + h_z)
        n = tanh(i_n + r * h_n)
        h_t = (1 - z) * n + z * h_(t-1)

    Parameters
    ----------
    input_size, hidden_size, num_layers, bias, batch_first, dropout, bidirectional
        As for :class:`RNN`.
    device, dtype, backend : optional
        As for :class:`RNN`.

    Notes
    -----
    ``forward(input, hx=None)`` returns ``(output, h_n)``; ``hx`` (``h_0``) is zeros
    if not given. The shapes, the parameter names and ``PackedSequence`` inputs are
    those of :class:`RNN`.

    Examples
    --------
    >>> import plugrad
    >>> _ = plugrad.manual_seed(0)
    >>> gru = plugrad.nn.GRU(4, 8)
    >>> gru.weight_ih_l0.shape, gru.weight_hh_l0.shape
    ((24, 4), (24, 8))
    >>> output, h_n = gru(plugrad.randn(6, 4))  # unbatched: (length, input_size)
    >>> output.shape, h_n.shape
    ((6, 8), (1, 8))
    """

    @with_placement
    def __init__(
        self,
        input_size: int,
        hidden_size: int,
        num_layers: int = 1,
        bias: bool = True,
        batch_first: bool = False,
        dropout: float = 0.0,
        bidirectional: bool = False,
        **placement: Unpack[ParameterPlacement],
    ) -> None:
        _refuse_projection("GRU", placement)
        super().__init__(
            "GRU", input_size, hidden_size, num_layers, bias, batch_first, dropout,
            bidirectional, **placement,
        )  # fmt: skip

    forward = RNN.forward  # one state, h, as RNN's


# -- cells: one step ----------------------------------------------------------------------


class RNNCellBase(Module):
    """What the cells share: ``weight_ih``, ``weight_hh``, ``bias_ih``, ``bias_hh`` of
    ``gates * hidden_size`` rows, their initialization and the checks of a call."""

    _gates = 1

    @with_placement
    def __init__(
        self,
        input_size: int,
        hidden_size: int,
        bias: bool = True,
        **placement: Unpack[ParameterPlacement],
    ) -> None:
        super().__init__()
        sizes = {"input_size": input_size, "hidden_size": hidden_size}
        _check_arguments(self, placement, sizes, {"bias": bias})
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.bias = bias
        rows = self._gates * hidden_size
        _add_parameter(self, "weight_ih", (rows, input_size), placement)
        _add_parameter(self, "weight_hh", (rows, hidden_size), placement)
        for name in ("bias_ih", "bias_hh"):
            if bias:
                _add_parameter(self, name, (rows,), placement)
            else:
                self.register_parameter(name, None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Draw new initial values: every parameter from ``U(-1/sqrt(hidden_size),
        1/sqrt(hidden_size))``, as PyTorch does."""
        _reset_uniform(self, self.hidden_size)

    def _prepare(self, input: Any, states: tuple[Any, ...]) -> tuple[Tensor, list[Tensor], bool]:
        """Check the call; return the input and states with a batch axis, and whether the
        input had one."""
        layer = type(self).__name__
        _check_input(layer, input, self.weight_ih, self.input_size, (1, 2))
        batched = input.ndim == 2
        input = input if batched else input.unsqueeze(0)
        shapes = [(input.shape[0], self.hidden_size)] * 2
        names = ["h_0", "c_0"] if len(states) == 2 else ["hx"]
        return input, _initial_states(layer, input, states, names, shapes, batched, 0), batched

    def _input_gates(self, input: Tensor) -> Tensor:
        return _input_gates(input, self.weight_ih, self.bias_ih)

    def extra_repr(self) -> str:
        text = f"{self.input_size}, {self.hidden_size}"
        if self.bias is not True:
            text += f", bias={self.bias}"
        nonlinearity = getattr(self, "nonlinearity", "tanh")
        if nonlinearity != "tanh":
            text += f", nonlinearity={nonlinearity}"
        return text


class RNNCell(RNNCellBase):
    """One step of :class:`RNN`: ``h' = tanh(x @ W_ih.T + b_ih + h @ W_hh.T + b_hh)``.

    With ``nonlinearity="relu"``, ReLU replaces tanh.

    Parameters
    ----------
    input_size, hidden_size : int
    bias : bool
        Whether to learn ``bias_ih`` and ``bias_hh`` ``(hidden_size,)``.
    nonlinearity : {"tanh", "relu"}
    device, dtype, backend : optional
        As for :class:`~plugrad.nn.Linear`.

    Notes
    -----
    ``forward(input, hx=None)`` takes ``input`` ``(N, input_size)`` or
    ``(input_size,)`` and ``hx`` ``(N, hidden_size)`` or ``(hidden_size,)`` (zeros if
    not given), and returns ``h'`` of ``hx``'s shape. ``weight_ih`` is
    ``(hidden_size, input_size)``, ``weight_hh`` ``(hidden_size, hidden_size)``, all
    initialized from ``U(-1/sqrt(hidden_size), 1/sqrt(hidden_size))``.

    Examples
    --------
    >>> import plugrad
    >>> _ = plugrad.manual_seed(0)
    >>> cell = plugrad.nn.RNNCell(10, 20, nonlinearity="relu")
    >>> cell
    RNNCell(10, 20, nonlinearity=relu)
    >>> h = None
    >>> for x in plugrad.randn(6, 3, 10):  # over the time steps
    ...     h = cell(x, h)
    >>> h.shape
    (3, 20)
    """

    @with_placement
    def __init__(
        self,
        input_size: int,
        hidden_size: int,
        bias: bool = True,
        nonlinearity: str = "tanh",
        **placement: Unpack[ParameterPlacement],
    ) -> None:
        step = _STEPS[_nonlinearity_mode("RNNCell", nonlinearity)]
        super().__init__(input_size, hidden_size, bias, **placement)
        self.nonlinearity = nonlinearity
        self._step = step

    def forward(self, input: Tensor, hx: Tensor | None = None) -> Tensor:
        input, (h,), batched = self._prepare(input, (hx,))
        h = self._step(self._input_gates(input), h, self.weight_hh, self.bias_hh)
        return h if batched else h.squeeze(0)


class LSTMCell(RNNCellBase):
    """One step of :class:`LSTM` (without projection).

    With ``i, f, g, o`` the four blocks of ``x @ W_ih.T + b_ih + h @ W_hh.T + b_hh``::

        c' = sigmoid(f) * c + sigmoid(i) * tanh(g)
        h' = sigmoid(o) * tanh(c')

    Parameters
    ----------
    input_size, hidden_size, bias, device, dtype, backend
        As for :class:`RNNCell`; ``bias_ih`` and ``bias_hh`` are ``(4 * hidden_size,)``.

    Notes
    -----
    ``forward(input, hx=None)`` takes ``input`` ``(N, input_size)`` or
    ``(input_size,)`` and ``hx`` the pair ``(h, c)``, each ``(N, hidden_size)`` or
    ``(hidden_size,)`` (zeros if not given), and returns the pair ``(h', c')``.
    ``weight_ih`` is ``(4 * hidden_size, input_size)``, ``weight_hh``
    ``(4 * hidden_size, hidden_size)``.

    Examples
    --------
    >>> import plugrad
    >>> _ = plugrad.manual_seed(0)
    >>> cell = plugrad.nn.LSTMCell(10, 20)
    >>> h, c = cell(plugrad.randn(3, 10))
    >>> h.shape, c.shape
    ((3, 20), (3, 20))
    >>> h, c = cell(plugrad.randn(3, 10), (h, c))
    """

    _gates = 4

    def forward(
        self, input: Tensor, hx: tuple[Tensor, Tensor] | None = None
    ) -> tuple[Tensor, Tensor]:
        states = (None, None) if hx is None else _state_pair("LSTMCell", hx)
        input, (h, c), batched = self._prepare(input, states)
        h, c = _lstm_step(self._input_gates(input), h, c, self.weight_hh, self.bias_hh, None)
        return (h, c) if batched else (h.squeeze(0), c.squeeze(0))


class GRUCell(RNNCellBase):
    """One step of :class:`GRU`.

    With ``r, z, n`` the three blocks of ``x @ W_ih.T + b_ih`` (``i_*``) and of
    ``h @ W_hh.T + b_hh`` (``h_*``)::

        r = sigmoid(i_r + h_r)
        z = sigmoid(i_z + h_z)
        n = tanh(i_n + r * h_n)
        h' = (1 - z) * n + z * h

    Parameters
    ----------
    input_size, hidden_size, bias, device, dtype, backend
        As for :class:`RNNCell`; ``bias_ih`` and ``bias_hh`` are ``(3 * hidden_size,)``.

    Notes
    -----
    ``forward(input, hx=None)`` takes ``input`` ``(N, input_size)`` or
    ``(input_size,)`` and ``hx`` ``(N, hidden_size)`` or ``(hidden_size,)`` (zeros if
    not given), and returns ``h'`` of ``hx``'s shape. ``weight_ih`` is
    ``(3 * hidden_size, input_size)``, ``weight_hh`` ``(3 * hidden_size, hidden_size)``.

    Examples
    --------
    >>> import plugrad
    >>> _ = plugrad.manual_seed(0)
    >>> cell = plugrad.nn.GRUCell(10, 20)
    >>> cell(plugrad.randn(10)).shape  # unbatched
    (20,)
    """

    _gates = 3
    _step = staticmethod(_gru_step)

    forward = RNNCell.forward  # one state, h, as RNNCell's
