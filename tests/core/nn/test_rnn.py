"""RNN, LSTM, GRU and their cells against torch.nn, with PyTorch's weights loaded.

Outputs, final states and the gradients with respect to the input, the initial
states and every parameter are compared in float64 on every backend.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pytest
from nn_compare import (
    assert_close,
    assert_layout_is_torchs,
    assert_raises_and_changes_nothing,
    backward_squared_gradient,
    compare,
    compare_parameter_gradients,
    eager_and_compiled_losses,
    flat,
    randn,
    torch_state,
    training_losses,
)

import plugrad
from plugrad import nn
from plugrad.errors import DtypeError, InvalidArgumentError, ShapeError

torch = pytest.importorskip("torch")

INPUT, HIDDEN, STEPS, BATCH = 3, 5, 4, 2


def make_pair(name: str, options: dict[str, Any]) -> tuple[nn.Module, Any]:
    """The layer or cell ``name`` of (INPUT, HIDDEN) with ``options``: ours, theirs (float64)."""
    ours = getattr(nn, name)(INPUT, HIDDEN, dtype=plugrad.float64, **options)
    return ours, getattr(torch.nn, name)(INPUT, HIDDEN, dtype=torch.float64, **options)


def compare_from_leaves(name: str, options: dict[str, Any], shapes: list[tuple[int, ...]]) -> None:
    """Layer or cell ``name`` against torch's, called on leaves of ``shapes``: the input,
    then the initial states if any (``(h, c)`` for an LSTM, else ``h``)."""

    def call(module: Any, x: Any, *states: Any) -> Any:
        if not states:
            return module(x)
        return module(x, tuple(states) if name.startswith("LSTM") else states[0])

    leaves = [randn(shape, seed) for seed, shape in enumerate(shapes)]
    compare(*make_pair(name, options), leaves, call=call)


BATCHED = pytest.mark.parametrize("batched", [True, False], ids=["batched", "unbatched"])
WITH_STATE = pytest.mark.parametrize("with_state", [False, True], ids=["zero-state", "with-state"])


LAYERS = [
    ("RNN", {}),
    ("RNN", {"nonlinearity": "relu"}),
    ("RNN", {"num_layers": 2, "bidirectional": True}),
    ("RNN", {"nonlinearity": "relu", "bias": False, "batch_first": True}),
    ("LSTM", {}),
    ("LSTM", {"num_layers": 2}),
    ("LSTM", {"bidirectional": True, "batch_first": True}),
    ("LSTM", {"bias": False}),
    ("LSTM", {"proj_size": 2}),
    ("LSTM", {"num_layers": 2, "bidirectional": True, "proj_size": 3, "batch_first": True}),
    ("GRU", {}),
    ("GRU", {"num_layers": 2, "bidirectional": True, "batch_first": True}),
    ("GRU", {"num_layers": 2, "bias": False}),
]


def layer_id(case: tuple[str, dict[str, Any]]) -> str:
    name, options = case
    return "-".join([name, *(f"{k}={v}" for k, v in options.items())])


@BATCHED
@WITH_STATE
@pytest.mark.parametrize("case", LAYERS, ids=[layer_id(c) for c in LAYERS])
def test_layer_matches_torch(backend, case, with_state, batched) -> None:
    name, options = case
    batch_axis = 0 if options.get("batch_first") else 1
    shape = [STEPS, INPUT]
    if batched:
        shape.insert(batch_axis, BATCH)
    shapes = [tuple(shape)]
    if with_state:
        depth = options.get("num_layers", 1) * (2 if options.get("bidirectional") else 1)
        batch = (BATCH,) if batched else ()
        shapes.append((depth, *batch, options.get("proj_size") or HIDDEN))
        if name == "LSTM":
            shapes.append((depth, *batch, HIDDEN))
    compare_from_leaves(name, options, shapes)


CELLS = [
    ("RNNCell", {}),
    ("RNNCell", {"nonlinearity": "relu"}),
    ("RNNCell", {"bias": False}),
    ("LSTMCell", {}),
    ("LSTMCell", {"bias": False}),
    ("GRUCell", {}),
    ("GRUCell", {"bias": False}),
]


@BATCHED
@WITH_STATE
@pytest.mark.parametrize("case", CELLS, ids=[layer_id(c) for c in CELLS])
def test_cell_matches_torch(backend, case, with_state, batched) -> None:
    name, options = case
    batch = (BATCH,) if batched else ()
    shapes = [(*batch, INPUT)]
    if with_state:
        shapes += [(*batch, HIDDEN)] * (2 if name == "LSTMCell" else 1)
    compare_from_leaves(name, options, shapes)


@pytest.mark.parametrize("name", ["RNN", "LSTM", "GRU"])
def test_second_order_gradients_match_torch(backend, name) -> None:
    """The gradient of ``|d loss / d x|^2`` with respect to every parameter."""
    ours, theirs = make_pair(name, {"num_layers": 2, "bidirectional": True})
    ours.load_state_dict(torch_state(theirs))
    (x, tx) = randn((STEPS, BATCH, INPUT), 3)
    backward_squared_gradient(plugrad, flat(ours(x)), x)
    backward_squared_gradient(torch, flat(theirs(tx)), tx)
    assert_close(x.grad, tx.grad, "second-order gradient of the input")
    compare_parameter_gradients(ours, theirs, "second-order gradient")


def test_gradgradcheck_of_a_gru(backend) -> None:
    ours = nn.GRU(2, 3, dtype=plugrad.float64)
    x, _ = randn((3, 1, 2), 4)
    h0, _ = randn((1, 1, 3), 5)
    plugrad.autograd.gradgradcheck(lambda a, b: ours(a, b)[0], [x, h0], atol=1e-5, rtol=1e-4)


def test_dropout_is_applied_between_layers_in_training_only() -> None:
    options = {"num_layers": 2, "dropout": 1.0}  # every output of layer 0 zeroed
    ours, theirs = make_pair("LSTM", options)
    ours.load_state_dict(torch_state(theirs))
    x, tx = randn((STEPS, BATCH, INPUT), 6)
    for mode in (True, False):
        ours.train(mode)
        theirs.train(mode)
        for a, b in zip(flat(ours(x)), flat(theirs(tx))):
            assert_close(a, b, f"training={mode}")
    plugrad.manual_seed(0)
    half = nn.GRU(INPUT, HIDDEN, num_layers=2, dropout=0.5, dtype=plugrad.float64)
    evaluated = half.eval()(x)[0].detach().numpy()
    np.testing.assert_array_equal(half(x)[0].detach().numpy(), evaluated)
    assert not np.allclose(half.train()(x)[0].detach().numpy(), evaluated)


def test_dropout_with_one_layer_warns_as_in_torch() -> None:
    with pytest.warns(UserWarning, match="dropout=0.5 does nothing with num_layers=1"):
        nn.GRU(2, 3, dropout=0.5)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        nn.GRU(2, 3, num_layers=2, dropout=0.5)


@pytest.mark.parametrize(
    "make",
    [
        lambda m: m.RNN(3, 4),
        lambda m: m.RNN(3, 4, 2, "relu", False, True, 0.25, True),
        lambda m: m.LSTM(3, 4, proj_size=2, num_layers=2, bidirectional=True),
        lambda m: m.GRU(3, 4, batch_first=True),
        lambda m: m.RNNCell(3, 4, bias=False, nonlinearity="relu"),
        lambda m: m.LSTMCell(3, 4),
        lambda m: m.GRUCell(3, 4, bias=False),
    ],
)
def test_repr_names_and_shapes_are_torchs(make) -> None:
    assert_layout_is_torchs(make(nn), make(torch.nn))


def test_state_dict_round_trip_and_torch_layout() -> None:
    plugrad.manual_seed(0)
    a = nn.LSTM(3, 4, num_layers=2, bidirectional=True, proj_size=2)
    assert a._flat_weights_names[:5] == [
        "weight_ih_l0",
        "weight_hh_l0",
        "bias_ih_l0",
        "bias_hh_l0",
        "weight_hr_l0",
    ]
    assert [p.shape for p in a.all_weights[3]] == [(16, 4), (16, 2), (16,), (16,), (2, 4)]
    b = nn.LSTM(3, 4, num_layers=2, bidirectional=True, proj_size=2)
    b.load_state_dict(a.state_dict())
    b.flatten_parameters()  # a no-op, kept for code written for cuDNN
    x = plugrad.randn(5, 2, 3)
    np.testing.assert_array_equal(a(x)[0].detach().numpy(), b(x)[0].detach().numpy())


@pytest.mark.parametrize("make", [lambda: nn.GRU(3, 16, num_layers=2), lambda: nn.LSTMCell(3, 16)])
def test_initialization_is_uniform_within_one_over_sqrt_hidden(make) -> None:
    plugrad.manual_seed(0)
    first = make()
    plugrad.manual_seed(0)
    again = make()
    for (name, p), q in zip(first.named_parameters(), again.parameters()):
        values = p.detach().numpy()
        assert np.all(np.abs(values) <= 0.25), name
        assert values.std() > 0.1, name  # spread over the interval, not constant
        np.testing.assert_array_equal(values, q.detach().numpy())


def test_module_conversions_keep_working() -> None:
    lstm = nn.LSTM(2, 3).double()
    out, (h, c) = lstm(plugrad.ones((4, 2), dtype=plugrad.float64))
    assert (out.dtype, out.shape, h.shape, c.shape) == (plugrad.float64, (4, 3), (1, 3), (1, 3))


def test_batch_first_does_not_change_the_state_layout() -> None:
    gru = nn.GRU(2, 3, num_layers=2, batch_first=True)
    out, h = gru(plugrad.ones((5, 7, 2)), plugrad.zeros((2, 5, 3)))
    assert (out.shape, h.shape) == ((5, 7, 3), (2, 5, 3))


# -- bad input ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("make", "error", "message"),
    [
        (lambda: nn.RNN(3, 4, nonlinearity="sigmoid"), InvalidArgumentError, "unknown nonli"),
        (lambda: nn.RNNCell(3, 4, nonlinearity="gelu"), InvalidArgumentError, "select 'tanh'"),
        (lambda: nn.LSTM(3, 4, dropout=1.5), InvalidArgumentError, "between 0 and 1"),
        (lambda: nn.GRU(3, 4, dropout=-0.1), InvalidArgumentError, "got -0.1"),
        (lambda: nn.GRU(3, 4, dropout=True), InvalidArgumentError, "dropout must be"),
        (lambda: nn.GRU(3, 0), InvalidArgumentError, "hidden_size must be greater than zero"),
        (lambda: nn.LSTM(3.0, 4), TypeError, "input_size must be an int, got float"),
        (lambda: nn.LSTM(3, 4, num_layers=0), InvalidArgumentError, "num_layers must be"),
        (lambda: nn.LSTM(3, 4, bias=1), TypeError, "bias must be True or False"),
        (lambda: nn.LSTM(3, 4, proj_size=4), InvalidArgumentError, "smaller than hidden_size"),
        (lambda: nn.LSTM(3, 4, proj_size=-1), InvalidArgumentError, "non-negative"),
        (lambda: nn.GRU(3, 4, proj_size=2), InvalidArgumentError, "only supported by LSTM"),
        (lambda: nn.RNN(3, 4, proj_size=2), InvalidArgumentError, "only supported by LSTM"),
        (lambda: nn.LSTM(3, 4, devcie="numpy"), TypeError, "unexpected keyword argument"),
        (lambda: nn.GRUCell(3, -2), InvalidArgumentError, "hidden_size must be greater"),
    ],
)
def test_bad_constructor_arguments(make, error, message) -> None:
    with pytest.raises(error, match=message):
        make()


def test_errors_are_the_builtin_ones_torch_raises_where_it_can() -> None:
    # PyTorch raises ValueError for these; ours are ValueErrors too.
    for make in (lambda m: m.RNN(3, 4, nonlinearity="x"), lambda m: m.GRU(3, 4, dropout=2)):
        with pytest.raises(ValueError):
            make(torch.nn)
        with pytest.raises(ValueError):
            make(nn)


@pytest.mark.parametrize(
    ("make", "call", "error", "message"),
    [
        (lambda: nn.LSTM(3, 4), lambda m: m(plugrad.zeros((5, 2, 6))), ShapeError, "input_size=3"),
        (
            lambda: nn.GRU(3, 4),
            lambda m: m(plugrad.zeros((1, 5, 2, 3))),
            ShapeError,
            "2-d \\(unbatch",
        ),
        (
            lambda: nn.RNN(3, 4),
            lambda m: m(plugrad.zeros((0, 2, 3))),
            ShapeError,
            "at least one step",
        ),
        (
            lambda: nn.GRU(3, 4),
            lambda m: m(plugrad.zeros((5, 2, 3)), plugrad.zeros((1, 3, 4))),
            ShapeError,
            r"expected h_0 of shape \(1, 2, 4\), got \(1, 3, 4\)",
        ),
        (
            lambda: nn.RNN(3, 4, num_layers=2),
            lambda m: m(plugrad.zeros((5, 3)), plugrad.zeros((2, 1, 4))),
            ShapeError,
            r"expected h_0 of shape \(2, 4\), got \(2, 1, 4\)",
        ),
        (
            lambda: nn.LSTM(3, 4, proj_size=2),
            lambda m: m(
                plugrad.zeros((5, 2, 3)), (plugrad.zeros((1, 2, 2)), plugrad.zeros((1, 2, 2)))
            ),
            ShapeError,
            r"expected c_0 of shape \(1, 2, 4\), got \(1, 2, 2\)",
        ),
        (
            lambda: nn.LSTM(3, 4),
            lambda m: m(plugrad.zeros((5, 2, 3)), plugrad.zeros((1, 2, 4))),
            TypeError,
            "pair \\(h_0, c_0\\)",
        ),
        (
            lambda: nn.GRU(3, 4),
            lambda m: m(np.zeros((5, 2, 3), np.float32)),
            TypeError,
            "PackedSequence",
        ),
        (
            lambda: nn.GRU(3, 4),
            lambda m: m(plugrad.zeros((5, 2, 3), dtype=plugrad.float64)),
            DtypeError,
            "the input is float64 but the weights are float32",
        ),
        (
            lambda: nn.GRU(3, 4),
            lambda m: m(plugrad.zeros((5, 2, 3)), plugrad.zeros((1, 2, 4), dtype=plugrad.float64)),
            DtypeError,
            "h_0 is float64 but the input is float32",
        ),
        (lambda: nn.GRUCell(3, 4), lambda m: m(plugrad.zeros((2, 5))), ShapeError, "input_size=3"),
        (
            lambda: nn.RNNCell(3, 4),
            lambda m: m(plugrad.zeros((1, 2, 3))),
            ShapeError,
            "1-d \\(unbatched",
        ),
        (
            lambda: nn.LSTMCell(3, 4),
            lambda m: m(plugrad.zeros((2, 3)), (plugrad.zeros((3, 4)), plugrad.zeros((2, 4)))),
            ShapeError,
            r"expected h_0 of shape \(2, 4\), got \(3, 4\)",
        ),
        (
            lambda: nn.GRUCell(3, 4),
            lambda m: m(plugrad.zeros(3), plugrad.zeros((1, 4))),
            ShapeError,
            r"expected hx of shape \(4,\), got \(1, 4\)",
        ),
    ],
)
def test_bad_calls_raise_and_change_nothing(make, call, error, message) -> None:
    assert_raises_and_changes_nothing(make(), call, error, message)


# -- training and compiling ---------------------------------------------------------------


class Tagger(nn.Module):
    """A bidirectional LSTM with a linear read-out at every step."""

    def __init__(self) -> None:
        super().__init__()
        self.lstm = nn.LSTM(2, 8, num_layers=2, batch_first=True, bidirectional=True)
        self.head = nn.Linear(16, 1)

    def forward(self, x: plugrad.Tensor) -> plugrad.Tensor:
        return self.head(self.lstm(x)[0])


def sequences() -> tuple[plugrad.Tensor, plugrad.Tensor]:
    """Running sums of random steps: a target that needs memory of the past."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((16, 6, 2)).astype(np.float32)
    return plugrad.asarray(x), plugrad.asarray(np.cumsum(x[..., :1], axis=1))


def test_training_an_lstm_decreases_the_loss() -> None:
    # On NumPy whatever the default backend: on Dask each of the 40 steps builds and computes
    # a lazy graph of the unrolled LSTM (7 to 15 s a step), past the suite's time limit.
    with plugrad.use_backend("numpy"):
        plugrad.manual_seed(0)
        losses = training_losses(Tagger(), *sequences(), lr=0.02)
    assert losses[-1] < 0.3 * losses[0]


def test_a_compiled_training_step_matches_the_eager_one() -> None:
    results = eager_and_compiled_losses(Tagger, *sequences())
    np.testing.assert_allclose(results[1], results[0], rtol=1e-6)


@pytest.mark.parametrize("cell", ["RNNCell", "LSTMCell", "GRUCell"])
def test_a_cell_given_a_packed_sequence_says_it_takes_one_step(cell: str) -> None:
    # It said "must be a Tensor or a PackedSequence, got PackedSequence".
    from plugrad.nn.utils.rnn import pack_padded_sequence

    packed = pack_padded_sequence(plugrad.randn(5, 3, 4), [5, 3, 1])
    layer = cell.removesuffix("Cell")
    with pytest.raises(plugrad.errors.ArgumentError, match=f"one step: run {layer} over"):
        getattr(nn, cell)(4, 3)(packed)
