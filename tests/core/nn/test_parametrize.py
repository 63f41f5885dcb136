"""plugrad.nn.utils.parametrize, parametrizations.weight_norm and the older weight_norm
against PyTorch's: state dict keys, values, training trajectories, assignment, removal."""

from __future__ import annotations

import copy
import warnings

import numpy as np
import pytest

import plugrad
from plugrad.errors import ArgumentError, DtypeError

torch = pytest.importorskip("torch")

WEIGHT = np.linspace(-1.0, 1.0, 12, dtype=np.float32).reshape(3, 2, 2)
INPUT = np.linspace(-2.0, 2.0, 10, dtype=np.float32).reshape(1, 2, 5)


def _conv(lib, normalization: str):
    conv = lib.nn.Conv1d(2, 3, 2)
    with lib.no_grad():
        conv.weight.copy_(lib.tensor(WEIGHT))
        conv.bias.copy_(lib.tensor([0.1, 0.2, 0.3]))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)  # the older one is deprecated in both
        if normalization == "parametrizations.weight_norm":
            lib.nn.utils.parametrizations.weight_norm(conv)
        elif normalization == "parametrizations.weight_norm(dim=None)":
            lib.nn.utils.parametrizations.weight_norm(conv, dim=None)
        else:
            lib.nn.utils.weight_norm(conv, dim=1)
    return conv


@pytest.mark.parametrize(
    "normalization",
    ["parametrizations.weight_norm", "parametrizations.weight_norm(dim=None)", "weight_norm"],
)
def test_weight_norm_trains_and_saves_as_pytorchs(normalization: str) -> None:
    found = []
    for lib in (plugrad, torch):
        conv = _conv(lib, normalization)
        optimizer = lib.optim.SGD(conv.parameters(), lr=0.1)
        x = lib.tensor(INPUT)
        for _ in range(3):
            optimizer.zero_grad()
            (conv(x) ** 2).sum().backward()
            optimizer.step()
        state = conv.state_dict()
        found.append((sorted(state), [state[k].numpy() for k in sorted(state)], conv(x)))
        found[-1] += (type(conv).__name__,)
    (keys, values, out, name), (their_keys, their_values, their_out, their_name) = found
    assert keys == their_keys and name == their_name
    for ours, theirs in zip(values, their_values, strict=True):
        np.testing.assert_allclose(ours, theirs, rtol=1e-4, atol=1e-5)  # (float32, 3 steps)
    np.testing.assert_allclose(
        out.detach().numpy(), their_out.detach().numpy(), rtol=1e-4, atol=1e-5
    )  # (as the state: on the torch backend a row differed by 4.5e-6 relative)


def test_removing_leaves_the_parametrized_value_and_the_class() -> None:
    for lib in (plugrad, torch):
        conv = _conv(lib, "parametrizations.weight_norm")
        before = conv(lib.tensor(INPUT)).detach().numpy()
        lib.nn.utils.parametrize.remove_parametrizations(conv, "weight")
        assert type(conv) is lib.nn.Conv1d and sorted(conv.state_dict()) == ["bias", "weight"]
        np.testing.assert_allclose(conv(lib.tensor(INPUT)).detach().numpy(), before, atol=1e-6)
        conv = _conv(lib, "weight_norm")
        lib.nn.utils.remove_weight_norm(conv)
        assert sorted(name for name, _ in conv.named_parameters()) == ["bias", "weight"]
        assert not lib.nn.utils.parametrize.is_parametrized(conv)


class Symmetric(plugrad.nn.Module):
    def forward(self, x):
        return x.triu() + x.triu(1).mT

    def right_inverse(self, a):
        return a.triu()


def test_a_parametrization_of_ones_own_with_assignment_caching_and_chaining() -> None:
    parametrize = plugrad.nn.utils.parametrize
    layer = plugrad.nn.Linear(3, 3)
    original = layer.weight
    parametrize.register_parametrization(layer, "weight", Symmetric())
    # The original tensor object lives on (an optimizer made before keeps training it).
    assert layer.parametrizations.weight.original is original
    assert parametrize.is_parametrized(layer) and parametrize.is_parametrized(layer, "weight")
    assert not parametrize.is_parametrized(layer, "bias")
    assert parametrize.type_before_parametrizations(layer) is plugrad.nn.Linear
    w = layer.weight
    np.testing.assert_array_equal(w.detach().numpy(), w.detach().numpy().T)
    layer.weight = plugrad.eye(3) * 2  # through right_inverse
    assert layer.weight.tolist() == (plugrad.eye(3) * 2).tolist()
    assert layer.weight is not layer.weight
    with parametrize.cached():
        assert layer.weight is layer.weight
    layer.weight.sum().backward()  # gradients reach the original
    assert original.grad is not None
    parametrize.register_parametrization(layer, "weight", plugrad.nn.Tanh())  # applied after
    np.testing.assert_allclose(layer.weight.detach().numpy(), np.tanh(2 * np.eye(3)), rtol=1e-6)
    copied = copy.deepcopy(layer)
    assert copied.weight.tolist() == layer.weight.tolist()
    parametrize.remove_parametrizations(layer, "weight", leave_parametrized=False)
    assert layer.weight is original and type(layer) is plugrad.nn.Linear


def test_misuse_is_refused_clearly() -> None:
    parametrize = plugrad.nn.utils.parametrize
    layer = plugrad.nn.Linear(2, 2)
    with pytest.raises(ValueError, match="no parameter or buffer named 'scale'"):
        parametrize.register_parametrization(layer, "scale", Symmetric())
    with pytest.raises(ValueError, match="no parametrization"):
        parametrize.remove_parametrizations(layer, "weight")
    with pytest.raises(TypeError, match="Module"):
        parametrize.register_parametrization(layer, "weight", lambda x: x)
    plugrad.nn.utils.parametrizations.weight_norm(layer)
    with pytest.raises(ValueError, match="several tensors"):
        parametrize.remove_parametrizations(layer, "weight", leave_parametrized=False)
    with pytest.raises(RuntimeError, match="does not implement right_inverse"):
        parametrize.register_parametrization(layer, "bias", plugrad.nn.Tanh())
        layer.bias = plugrad.zeros(2)


class _Halves(plugrad.nn.Module):
    """The sum of two originals; right_inverse gives ``count`` tensors (2 at registration)."""

    count = 2

    def forward(self, a, b):
        return a + b

    def right_inverse(self, z):
        return (z / 2,) * self.count


class _Identity(plugrad.nn.Module):
    def forward(self, x):
        return x

    def right_inverse(self, x):
        return x


def test_an_assignment_whose_right_inverse_does_not_fit_the_originals_changes_nothing() -> None:
    # A float64 value became the float32 parameter's dtype; a right_inverse giving one
    # tensor of two set the first only, and one giving three set two, then raised.
    register = plugrad.nn.utils.parametrize.register_parametrization
    layer = register(plugrad.nn.Linear(2, 2), "weight", _Identity())
    before = layer.weight.tolist()
    with pytest.raises(DtypeError, match="float64 tensor for original, which is float32"):
        layer.weight = plugrad.ones(2, 2, dtype=plugrad.float64)
    assert layer.parametrizations.weight.original.dtype is plugrad.float32
    assert layer.weight.tolist() == before
    halves = _Halves()
    layer = register(plugrad.nn.Linear(2, 2), "weight", halves)
    before = layer.weight.tolist()
    for count in (1, 3):
        halves.count = count
        with pytest.raises(ValueError, match=f"must give 2 tensors here.*got {count}"):
            layer.weight = plugrad.full((2, 2), 10.0)
        assert layer.weight.tolist() == before
    halves.count = 2
    with pytest.raises(DtypeError, match="for original0"):
        layer.weight = plugrad.ones(2, 2, dtype=plugrad.float64)
    layer.weight = plugrad.full((2, 2), 10.0)
    assert layer.weight.tolist() == [[10.0, 10.0], [10.0, 10.0]]

    class Number(plugrad.nn.Module):
        def forward(self, x):
            return x

        def right_inverse(self, x):
            return 3.0

    with pytest.raises(ArgumentError, match="a tensor or a sequence of tensors, got float"):
        register(plugrad.nn.Linear(2, 2), "weight", Number())


def test_a_right_inverse_that_is_not_implemented_is_the_identity_at_registration() -> None:
    class AddOne(plugrad.nn.Module):
        def forward(self, x):
            return x + 1

        def right_inverse(self, x):
            raise NotImplementedError

    register = plugrad.nn.utils.parametrize.register_parametrization
    layer = plugrad.nn.Linear(2, 2)
    before = layer.weight.tolist()
    register(layer, "weight", AddOne())  # raised NotImplementedError
    np.testing.assert_allclose(layer.weight.tolist(), np.array(before) + 1)
    register(layer, "weight", AddOne())  # stacked: the same
    np.testing.assert_allclose(layer.weight.tolist(), np.array(before) + 2)


@pytest.mark.parametrize("frozen", [False, True])
def test_removing_a_parametrization_of_several_originals_keeps_parameter_or_buffer(frozen) -> None:
    # A parameter where an original requires grad, else a buffer, as PyTorch's (it was a
    # parameter whenever the first original was one, frozen or not).
    parametrize = plugrad.nn.utils.parametrize
    layer = plugrad.nn.Linear(2, 2)
    layer.weight.requires_grad_(not frozen)
    parametrize.register_parametrization(layer, "weight", _Halves())
    value = layer.weight.tolist()
    parametrize.remove_parametrizations(layer, "weight")
    parameters = [name for name, _ in layer.named_parameters()]
    buffers = [name for name, _ in layer.named_buffers()]
    assert (parameters, buffers) == ((["bias"], ["weight"]) if frozen else (["bias", "weight"], []))
    assert layer.weight.tolist() == value and layer.weight.requires_grad is not frozen


def _spectral(lib, style: str, transposed: bool, start=None):
    layer = (lib.nn.ConvTranspose1d if transposed else lib.nn.Conv1d)(2, 3, 2)
    with lib.no_grad():
        layer.weight.copy_(lib.tensor(WEIGHT.reshape(layer.weight.shape)))
        layer.bias.copy_(lib.tensor([0.1, 0.2, 0.3][: layer.bias.shape[0]]))
    if style == "parametrizations.spectral_norm":
        lib.nn.utils.parametrizations.spectral_norm(layer)
    else:
        lib.nn.utils.spectral_norm(layer)
    if start is not None:  # the power method's random start, PyTorch's
        with lib.no_grad():
            for name, buffer in layer.named_buffers():
                buffer.copy_(lib.tensor(start[name]))
    return layer


@pytest.mark.parametrize("style", ["parametrizations.spectral_norm", "spectral_norm"])
@pytest.mark.parametrize("transposed", [False, True], ids=["Conv1d", "ConvTranspose1d"])
def test_spectral_norm_trains_and_saves_as_pytorchs(style: str, transposed: bool) -> None:
    found = []
    start = None
    for lib in (torch, plugrad):
        layer = _spectral(lib, style, transposed, start)
        start = {name: b.detach().numpy().copy() for name, b in layer.named_buffers()}
        optimizer = lib.optim.SGD(layer.parameters(), lr=0.1)
        x, outputs = lib.tensor(INPUT), []
        for _ in range(3):
            optimizer.zero_grad()
            (layer(x) ** 2).sum().backward()
            optimizer.step()
            outputs.append(layer(x).detach().numpy().copy())
        layer.eval()  # no power iteration: the same weight at every call
        outputs += [layer(x).detach().numpy(), layer(x).detach().numpy()]
        state = layer.state_dict()
        found.append((sorted(state), [state[k].numpy() for k in sorted(state)], outputs))
    (their_keys, their_state, their_outputs), (keys, state, outputs) = found
    assert keys == their_keys
    for ours, theirs in zip([*state, *outputs], [*their_state, *their_outputs], strict=True):
        np.testing.assert_allclose(ours, theirs, rtol=1e-4, atol=1e-5)


def test_spectral_norm_makes_the_largest_singular_value_one_and_is_removed() -> None:
    plugrad.manual_seed(0)
    layer = plugrad.nn.utils.parametrizations.spectral_norm(plugrad.nn.Linear(5, 4))
    for _ in range(100):  # each read in training is a step of the power method
        _ = layer.weight
    layer.eval()
    assert float(plugrad.linalg.matrix_norm(layer.weight, ord=2)) == pytest.approx(1.0, 1e-4)
    old = plugrad.nn.utils.spectral_norm(plugrad.nn.Linear(5, 4))
    old(plugrad.ones(1, 5))
    before = old.weight.detach().numpy()
    plugrad.nn.utils.remove_spectral_norm(old.eval())
    assert sorted(old.state_dict()) == ["bias", "weight"]
    np.testing.assert_allclose(old.weight.detach().numpy(), before, rtol=1e-5)
    with pytest.raises(ValueError, match="n_power_iterations"):
        plugrad.nn.utils.parametrizations.spectral_norm(
            plugrad.nn.Linear(2, 2), n_power_iterations=0
        )
    with pytest.raises(ValueError, match="not found"):
        plugrad.nn.utils.remove_spectral_norm(plugrad.nn.Linear(2, 2))


class _First(plugrad.nn.Module):
    def forward(self, x):
        return x[:1]


class _Flat(plugrad.nn.Module):
    def forward(self, x):
        return x.reshape(2, 3)

    def right_inverse(self, x):
        return x.reshape(-1)


def test_pytorchs_consistency_checks_of_a_parametrization() -> None:
    register = plugrad.nn.utils.parametrize.register_parametrization
    with pytest.raises(ValueError, match="shape"):
        register(plugrad.nn.Linear(3, 2), "weight", _First())  # the weight would change shape

    class Doubling(_First):
        def right_inverse(self, x):
            return x * 2

    refused = plugrad.nn.Linear(3, 2)
    values = refused.weight.tolist()
    with pytest.raises(ValueError, match="shape"):
        register(refused, "weight", Doubling())
    assert refused.weight.tolist() == values and type(refused) is plugrad.nn.Linear
    layer = register(plugrad.nn.Linear(3, 2), "weight", _First(), unsafe=True)
    assert layer.weight.shape == (1, 3)
    # An original of another shape is fine where the parametrized tensor keeps its own.
    layer = register(plugrad.nn.Linear(3, 2), "weight", _Flat())
    assert layer.parametrizations.weight.original.shape == (6,) and layer.weight.shape == (2, 3)
    with pytest.raises(ValueError, match="shape"):
        register(layer, "weight", _First())  # a second one that changes the shape

    # The default dim of spectral_norm follows the class, subclasses and parametrized too.
    class Deconvolution(plugrad.nn.ConvTranspose2d):
        pass

    normed = plugrad.nn.utils.parametrizations.spectral_norm(Deconvolution(2, 3, 2))
    assert normed.parametrizations.weight[0]._u.shape == (3,)


def test_older_weight_norm_checkpoints_load_and_power_steps_write_the_buffers() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        older = plugrad.nn.utils.weight_norm(plugrad.nn.Linear(3, 2))
    newer = plugrad.nn.utils.parametrizations.weight_norm(plugrad.nn.Linear(3, 2))
    result = newer.load_state_dict(older.state_dict())  # weight_g, weight_v: renamed on load
    assert not result.missing_keys and not result.unexpected_keys
    x = plugrad.ones(1, 3)
    np.testing.assert_allclose(newer(x).detach().numpy(), older(x).detach().numpy(), rtol=1e-6)
    normed = plugrad.nn.utils.parametrizations.spectral_norm(plugrad.nn.Linear(3, 2))
    state = normed.state_dict()
    normed(x)  # a step of the power method, in training
    assert state["parametrizations.weight.0._u"] is not None
    np.testing.assert_array_equal(
        state["parametrizations.weight.0._u"].numpy(),
        normed.parametrizations.weight[0]._u.numpy(),  # the same memory: written in place
    )


@pytest.mark.parametrize("dim", [2, -3])
def test_weight_norm_refuses_a_dim_the_weight_does_not_have(dim: int) -> None:
    # dim % ndim took dim=2 of a matrix as dim 0 (PyTorch refuses it); nothing is changed.
    from plugrad.nn.utils import norm_hooks

    for register in (plugrad.nn.utils.parametrizations.weight_norm, norm_hooks.weight_norm):
        layer = plugrad.nn.Linear(3, 2)
        weight = layer.weight
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)  # the older weight_norm's
            with pytest.raises(plugrad.errors.AxisError, match=f"dim={dim} is out of range"):
                register(layer, dim=dim)
        names = [name for name, _ in layer.named_parameters()]
        assert layer.weight is weight and names == ["weight", "bias"]


def test_a_parametrized_module_refuses_pickling_with_a_typed_error_and_deep_copies() -> None:
    # pickle raised its own PicklingError (the made class cannot be found by name).
    import pickle

    from plugrad.nn.utils import parametrize

    layer = plugrad.nn.Linear(3, 3)
    parametrize.register_parametrization(layer, "weight", Symmetric())
    for obj in (layer, plugrad.nn.Sequential(layer)):
        with pytest.raises(plugrad.errors.SerializationError, match=r"state_dict\(\)"):
            pickle.dumps(obj)
    twin = copy.deepcopy(layer)
    assert type(twin) is type(layer)
    assert twin.parametrizations.weight.original is not layer.parametrizations.weight.original
    x = plugrad.randn(2, 3)
    np.testing.assert_array_equal(twin(x).detach().numpy(), layer(x).detach().numpy())
    parametrize.remove_parametrizations(layer, "weight")
    assert pickle.loads(pickle.dumps(layer)).weight.shape == (3, 3)


def test_functional_call_given_a_parametrized_name_uses_the_tensor_as_pytorch() -> None:
    # A TensorNameError: "weight" of a parametrized module is no parameter of it.
    from plugrad.func import functional_call
    from plugrad.nn.utils import parametrize

    found, layers = [], []
    for lib, call in ((plugrad, functional_call), (torch, torch.func.functional_call)):
        layer = lib.nn.Linear(2, 1, bias=False)
        layers.append(layer)
        lib.nn.utils.parametrize.register_parametrization(layer, "weight", _doubled(lib))
        w = lib.tensor([[1.0, 2.0]], requires_grad=True)
        x = lib.tensor([[3.0, 4.0]])
        as_given = call(layer, {"weight": w}, (x,))
        parametrized = call(layer, {"parametrizations.weight.original": w}, (x,))
        found.append((as_given.tolist(), parametrized.tolist()))
    assert found[0] == found[1] == ([[11.0]], [[22.0]])
    assert not parametrize._given  # (nothing left behind)
    # The call is a function of the tensor given (PyTorch's assigns it through
    # right_inverse, without a gradient to it).
    w = plugrad.tensor([[1.0, 2.0]], requires_grad=True)
    functional_call(layers[0], {"weight": w}, (plugrad.tensor([[3.0, 4.0]]),)).sum().backward()
    assert w.grad.tolist() == [[3.0, 4.0]]


def _doubled(lib):  # a parametrization for either library
    class Doubled(lib.nn.Module):
        def forward(self, X):
            return X * 2

        def right_inverse(self, X):  # (PyTorch's functional_call assigns the given tensor)
            return X / 2

    return Doubled()
