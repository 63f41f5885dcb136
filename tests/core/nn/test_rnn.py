"""RNN, LSTM, GRU and their cells against torch.nn, with PyTorch's weights loaded.

Outputs, final states and the gradients with respect to the input, the initial
states and every parameter are compared in float64 on every backend.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pytest

import plugrad
from plugrad import nn
from plugrad.errors import DtypeError, InvalidArgumentError, ShapeError

torch = pytest.importorskip("torch")

RTOL, ATOL = 1e-10, 1e-12
INPUT, HIDDEN, STEPS, BATCH = 3, 5, 4, 2


def torch_state(module: Any) -> dict[str, np.ndarray]:
    """A torch module's state dict as NumPy arrays (what a user converts and loads)."""
    return {key: value.detach().numpy() for key, value in module.state_dict().items()}


def pair(shape: tuple[int, ...], seed: int) -> tuple[plugrad.Tensor, Any]:
    """The same float64 leaf in plugrad (on the default device) and in torch."""
    values = np.random.default_rng(seed).standard_normal(shape)
    ours = plugrad.asarray(values, device=plugrad.default_device(), requires_grad=True)
    return ours, torch.tensor(values, requires_grad=True)


def flat(result: Any) -> list[Any]:
    """``(output, h_n)`` or ``(output, (h_n, c_n))`` or a cell's result, as a list."""
    if isinstance(result, tuple):
        return [item for part in result for item in flat(part)]
    return [result]


def weighted_sum(outputs: list[Any], lib: Any) -> Any:
    total = 0
    for index, out in enumerate(outputs):
        weights = np.linspace(0.5, 1.5, int(np.prod(out.shape))).reshape(tuple(out.shape))
        weights = weights * (index + 1)
        if lib is plugrad:
            total = total + (out * plugrad.asarray(weights, device=out.device)).sum()
        else:
            total = total + (out * torch.tensor(weights)).sum()
    return total


def assert_close(ours: plugrad.Tensor, theirs: Any, what: str) -> None:
    assert ours.shape == tuple(theirs.shape), what
    np.testing.assert_allclose(
        ours.detach().numpy(), theirs.detach().numpy(), rtol=RTOL, atol=ATOL, err_msg=what
    )


def compare(ours: nn.Module, theirs: Any, inputs: list[tuple[Any, Any]], call: Any) -> None:
    """Load torch's weights, call both with ``call(module, *inputs)``, compare everything."""
    ours.load_state_dict(torch_state(theirs))
    our_out = flat(call(ours, *(a for a, _ in inputs)))
    their_out = flat(call(theirs, *(b for _, b in inputs)))
    assert len(our_out) == len(their_out)
    for index, (a, b) in enumerate(zip(our_out, their_out)):
        assert_close(a, b, f"result {index}")
    weighted_sum(our_out, plugrad).backward()
    weighted_sum(their_out, torch).backward()
    for index, (a, b) in enumerate(inputs):
        assert_close(a.grad, b.grad, f"gradient of input {index}")
    theirs_named = dict(theirs.named_parameters())
    assert [name for name, _ in ours.named_parameters()] == list(theirs_named)
    for name, parameter in ours.named_parameters():
        assert parameter.grad.dtype is plugrad.float64
        assert_close(parameter.grad, theirs_named[name].grad, f"gradient of {name}")


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


@pytest.mark.parametrize("batched", [True, False], ids=["batched", "unbatched"])
@pytest.mark.parametrize("with_state", [False, True], ids=["zero-state", "with-state"])
@pytest.mark.parametrize("case", LAYERS, ids=[layer_id(c) for c in LAYERS])
def test_layer_matches_torch(backend, case, with_state, batched) -> None:
    name, options = case
    theirs = getattr(torch.nn, name)(INPUT, HIDDEN, dtype=torch.float64, **options)
    ours = getattr(nn, name)(INPUT, HIDDEN, dtype=plugrad.float64, **options)
    batch_axis = 0 if options.get("batch_first") else 1
    shape = [STEPS, INPUT]
    if batched:
        shape.insert(batch_axis, BATCH)
    inputs = [pair(tuple(shape), 0)]
    if with_state:
        depth = options.get("num_layers", 1) * (2 if options.get("bidirectional") else 1)
        batch = (BATCH,) if batched else ()
        inputs.append(pair((depth, *batch, options.get("proj_size") or HIDDEN), 1))
        if name == "LSTM":
            inputs.append(pair((depth, *batch, HIDDEN), 2))

    def call(module: Any, x: Any, *states: Any) -> Any:
        if not states:
            return module(x)
        return module(x, tuple(states) if name == "LSTM" else states[0])

    compare(ours, theirs, inputs, call)


CELLS = [
    ("RNNCell", {}),
    ("RNNCell", {"nonlinearity": "relu"}),
    ("RNNCell", {"bias": False}),
    ("LSTMCell", {}),
    ("LSTMCell", {"bias": False}),
    ("GRUCell", {}),
    ("GRUCell", {"bias": False}),
]


@pytest.mark.parametrize("batched", [True, False], ids=["batched", "unbatched"])
@pytest.mark.parametrize("with_state", [False, True], ids=["zero-state", "with-state"])
@pytest.mark.parametrize("case", CELLS, ids=[layer_id(c) for c in CELLS])
def test_cell_matches_torch(backend, case, with_state, batched) -> None:
    name, options = case
    theirs = getattr(torch.nn, name)(INPUT, HIDDEN, dtype=torch.float64, **options)
    ours = getattr(nn, name)(INPUT, HIDDEN, dtype=plugrad.float64, **options)
    batch = (BATCH,) if batched else ()
    inputs = [pair((*batch, INPUT), 0)]
    if with_state:
        inputs.append(pair((*batch, HIDDEN), 1))
        if name == "LSTMCell":
            inputs.append(pair((*batch, HIDDEN), 2))

    def call(module: Any, x: Any, *states: Any) -> Any:
        if not states:
            return module(x)
        return module(x, tuple(states) if name == "LSTMCell" else states[0])

    compare(ours, theirs, inputs, call)


@pytest.mark.parametrize("name", ["RNN", "LSTM", "GRU"])
def test_second_order_gradients_match_torch(backend, name) -> None:
    """The gradient of ``|d loss / d x|^2`` with respect to every parameter."""
    options = {"num_layers": 2, "bidirectional": True}
    theirs = getattr(torch.nn, name)(INPUT, HIDDEN, dtype=torch.float64, **options)
    ours = getattr(nn, name)(INPUT, HIDDEN, dtype=plugrad.float64, **options)
    ours.load_state_dict(torch_state(theirs))
    (x, tx) = pair((STEPS, BATCH, INPUT), 3)
    (g,) = plugrad.autograd.grad(weighted_sum(flat(ours(x)), plugrad), x, create_graph=True)
    (tg,) = torch.autograd.grad(weighted_sum(flat(theirs(tx)), torch), tx, create_graph=True)
    (g * g).sum().backward()
    (tg * tg).sum().backward()
    assert_close(x.grad, tx.grad, "second-order gradient of the input")
    for (key, p), (_, q) in zip(ours.named_parameters(), theirs.named_parameters()):
        assert_close(p.grad, q.grad, f"second-order gradient of {key}")


def test_gradgradcheck_of_a_gru(backend) -> None:
    ours = nn.GRU(2, 3, dtype=plugrad.float64)
    x, _ = pair((3, 1, 2), 4)
    h0, _ = pair((1, 1, 3), 5)
    plugrad.autograd.gradgradcheck(lambda a, b: ours(a, b)[0], [x, h0], atol=1e-5, rtol=1e-4)


def test_dropout_is_applied_between_layers_in_training_only() -> None:
    options = {"num_layers": 2, "dropout": 1.0}  # every output of layer 0 zeroed
    theirs = torch.nn.LSTM(INPUT, HIDDEN, dtype=torch.float64, **options)
    ours = nn.LSTM(INPUT, HIDDEN, dtype=plugrad.float64, **options)
    ours.load_state_dict(torch_state(theirs))
    x, tx = pair((STEPS, BATCH, INPUT), 6)
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
    ours, theirs = make(nn), make(torch.nn)
    assert repr(ours) == repr(theirs)
    assert {k: v.shape for k, v in ours.state_dict().items()} == {
        k: tuple(v.shape) for k, v in theirs.state_dict().items()
    }
    assert list(ours.state_dict()) == list(theirs.state_dict())


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
        (lambda: nn.LSTM(3, 4, bias=1), TypeError, "bias must be a bool"),
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
    module = make()
    before = {k: v.detach().numpy().copy() for k, v in module.state_dict().items()}
    with pytest.raises(error, match=message):
        call(module)
    for key, value in module.state_dict().items():
        np.testing.assert_array_equal(value.numpy(), before[key])
        assert getattr(module, key).grad is None


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
    plugrad.manual_seed(0)
    model = Tagger()
    optimizer = plugrad.optim.Adam(model.parameters(), lr=0.02)
    x, y = sequences()
    losses = []
    for _ in range(40):
        loss = nn.functional.mse_loss(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    assert losses[-1] < 0.3 * losses[0]


def training_step(model: nn.Module, x: plugrad.Tensor, y: plugrad.Tensor) -> Any:
    optimizer = plugrad.optim.SGD(model.parameters(), lr=0.1)

    def step() -> plugrad.Tensor:
        loss = nn.functional.mse_loss(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        return loss

    return step


def test_a_compiled_training_step_matches_the_eager_one() -> None:
    x, y = sequences()
    results = []
    for compiled in (False, True):
        plugrad.manual_seed(0)
        step = training_step(Tagger(), x, y)
        run = plugrad.compile(step, fullgraph=True) if compiled else step
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # no fallback to eager, no graph break
            results.append([run().item() for _ in range(3)])
    np.testing.assert_allclose(results[1], results[0], rtol=1e-6)
