"""The layers against torch.nn, with PyTorch's weights loaded through load_state_dict."""

from __future__ import annotations

import math

import numpy as np
import pytest

import plugrad
from plugrad import nn

torch = pytest.importorskip("torch")


def copy_from(ours: nn.Module, theirs: torch.nn.Module) -> None:
    """Load PyTorch's parameters and buffers: the state-dict keys are the same."""
    ours.load_state_dict({k: v.detach().numpy() for k, v in theirs.state_dict().items()})


def same_outputs_and_gradients(
    ours: nn.Module, theirs: torch.nn.Module, *inputs: np.ndarray, rtol: float = 1e-5
) -> None:
    copy_from(ours, theirs)
    mine = [plugrad.asarray(a, requires_grad=a.dtype.kind == "f") for a in inputs]
    reference = [torch.tensor(a, requires_grad=a.dtype.kind == "f") for a in inputs]
    out, expected = ours(*mine), theirs(*reference)
    np.testing.assert_allclose(
        out.detach().numpy(), expected.detach().numpy(), rtol=rtol, atol=1e-6
    )
    weights = np.random.default_rng(1).uniform(0.5, 1.5, tuple(expected.shape)).astype(np.float32)
    out.backward(plugrad.asarray(weights))
    expected.backward(torch.tensor(weights))
    for (name, p), (_, q) in zip(ours.named_parameters(), theirs.named_parameters()):
        assert p.grad.dtype == plugrad.float32, name
        np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=rtol, atol=1e-5)
    for m, r in zip(mine, reference):
        if r.requires_grad:
            np.testing.assert_allclose(m.grad.numpy(), r.grad.numpy(), rtol=rtol, atol=1e-5)


RNG = np.random.default_rng(5)


def images(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape).astype(np.float32)


LAYERS = [
    ("linear", lambda m: m.Linear(5, 3), (4, 5)),
    ("linear-no-bias-3d", lambda m: m.Linear(5, 2, bias=False), (2, 3, 5)),
    ("conv", lambda m: m.Conv2d(3, 4, 3, padding=1), (2, 3, 6, 5)),
    ("conv-strided-groups", lambda m: m.Conv2d(4, 6, (3, 2), stride=2, groups=2), (2, 4, 7, 6)),
    ("conv-same", lambda m: m.Conv2d(2, 3, 3, padding="same", dilation=(1, 2)), (1, 2, 6, 7)),
    ("layer-norm", lambda m: m.LayerNorm(6), (3, 6)),
    ("layer-norm-2d", lambda m: m.LayerNorm((2, 3), eps=1e-3), (4, 2, 3)),
    ("layer-norm-no-bias", lambda m: m.LayerNorm(4, bias=False), (3, 4)),
    ("layer-norm-no-affine", lambda m: m.LayerNorm(4, elementwise_affine=False), (3, 4)),
    ("max-pool", lambda m: m.MaxPool2d(2), (2, 3, 6, 6)),
    ("max-pool-ceil", lambda m: m.MaxPool2d(3, 2, padding=1, ceil_mode=True), (1, 2, 6, 7)),
    ("avg-pool", lambda m: m.AvgPool2d(3, 2, padding=1, count_include_pad=False), (1, 2, 7, 6)),
    ("flatten", lambda m: m.Flatten(), (2, 3, 4)),
    ("flatten-middle", lambda m: m.Flatten(1, 2), (2, 3, 4, 5)),
    ("relu", lambda m: m.ReLU(), (3, 4)),
    ("gelu-tanh", lambda m: m.GELU("tanh"), (3, 4)),
    ("tanh", lambda m: m.Tanh(), (3, 4)),
    ("sigmoid", lambda m: m.Sigmoid(), (3, 4)),
    ("softmax", lambda m: m.Softmax(dim=1), (3, 4)),
    ("silu", lambda m: m.SiLU(), (3, 4)),
    ("leaky-relu", lambda m: m.LeakyReLU(0.2), (3, 4)),
    ("elu", lambda m: m.ELU(0.7), (3, 4)),
    ("batch-norm-1d", lambda m: m.BatchNorm1d(4), (5, 4)),
    ("batch-norm-1d-3d", lambda m: m.BatchNorm1d(3, momentum=None), (2, 3, 5)),
    ("batch-norm-2d", lambda m: m.BatchNorm2d(3, eps=1e-3), (2, 3, 4, 5)),
    ("batch-norm-2d-no-affine", lambda m: m.BatchNorm2d(3, affine=False), (2, 3, 4, 5)),
    ("batch-norm-2d-no-bias", lambda m: m.BatchNorm2d(3, bias=False), (2, 3, 4, 5)),
    ("batch-norm-untracked", lambda m: m.BatchNorm1d(4, track_running_stats=False), (5, 4)),
    ("batch-norm-3d", lambda m: m.BatchNorm3d(2, momentum=None), (2, 2, 3, 2, 4)),
    ("instance-norm-3d", lambda m: m.InstanceNorm3d(2, affine=True), (2, 2, 3, 2, 4)),
    ("instance-norm-3d-unbatched", lambda m: m.InstanceNorm3d(2), (2, 3, 2, 4)),
    ("log-softmax", lambda m: m.LogSoftmax(dim=0), (3, 4)),
    (
        "cnn",
        lambda m: m.Sequential(
            m.Conv2d(1, 4, 3, padding=1),
            m.ReLU(),
            m.MaxPool2d(2),
            m.Conv2d(4, 4, 3),
            m.GELU(),
            m.AvgPool2d(2),
            m.Flatten(),
            m.Linear(4, 3),
        ),
        (2, 1, 10, 10),
    ),
]


@pytest.mark.parametrize(("make", "shape"), [c[1:] for c in LAYERS], ids=[c[0] for c in LAYERS])
def test_layers_match_pytorch(backend, make, shape) -> None:
    same_outputs_and_gradients(make(nn), make(torch.nn), images(*shape))


def test_embedding_matches_pytorch(backend) -> None:
    indices = np.array([[1, 4, 4], [0, 2, 4]])
    same_outputs_and_gradients(nn.Embedding(5, 3, 4), torch.nn.Embedding(5, 3, 4), indices)


@pytest.mark.parametrize(
    "options",
    [
        {"max_norm": 1.0},
        {"max_norm": 1.5, "norm_type": 1.0, "padding_idx": 0},
        {"scale_grad_by_freq": True},
        {"scale_grad_by_freq": True, "padding_idx": 4, "max_norm": 0.5},
        {"sparse": True},
    ],
)
def test_embedding_options_match_pytorch(backend, options) -> None:
    # max_norm rescales the rows looked up in place; the gradients of rows used twice are
    # halved with scale_grad_by_freq; sparse gradients arrive dense here (the same numbers).
    indices = np.array([[1, 4, 4], [0, 2, 4]])
    ours, theirs = nn.Embedding(5, 3, **options), torch.nn.Embedding(5, 3, **options)
    assert repr(ours) == repr(theirs)
    with torch.no_grad():
        theirs.weight.mul_(3.0)
    copy_from(ours, theirs)
    out, expected = ours(plugrad.asarray(indices)), theirs(torch.tensor(indices))
    np.testing.assert_allclose(out.detach().numpy(), expected.detach().numpy(), rtol=1e-6)
    np.testing.assert_allclose(ours.weight.detach().numpy(), theirs.weight.detach().numpy(),
                               rtol=1e-6)  # fmt: skip
    weights = np.random.default_rng(2).uniform(0.5, 1.5, (2, 3, 3)).astype(np.float32)
    out.backward(plugrad.asarray(weights))
    expected.backward(torch.tensor(weights))
    grad = theirs.weight.grad.to_dense() if theirs.weight.grad.is_sparse else theirs.weight.grad
    np.testing.assert_allclose(ours.weight.grad.numpy(), grad.numpy(), rtol=1e-6)


def test_bilinear_matches_pytorch(backend) -> None:
    ours, theirs = nn.Bilinear(4, 3, 5), torch.nn.Bilinear(4, 3, 5)
    assert repr(ours) == repr(theirs)
    same_outputs_and_gradients(ours, theirs, images(2, 6, 4), images(2, 6, 3))
    no_bias = nn.Bilinear(2, 2, 1, bias=False)
    same_outputs_and_gradients(no_bias, torch.nn.Bilinear(2, 2, 1, bias=False), images(3, 2),
                               images(3, 2))  # fmt: skip
    with pytest.raises(plugrad.errors.ShapeError, match="same leading shape"):
        ours(plugrad.ones(2, 4), plugrad.ones(3, 3))


def test_embedding_from_pretrained_is_pytorchs() -> None:
    table = plugrad.tensor([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
    frozen = nn.Embedding.from_pretrained(table, padding_idx=0)
    assert not frozen.weight.requires_grad and repr(frozen) == "Embedding(3, 2, padding_idx=0)"
    assert frozen(plugrad.tensor([2, 0])).tolist() == [[5.0, 6.0], [1.0, 2.0]]  # not zeroed
    learned = nn.Embedding.from_pretrained(table, freeze=False)
    learned(plugrad.tensor([1, 1])).sum().backward()
    assert learned.weight.grad.tolist() == [[0.0, 0.0], [2.0, 2.0], [0.0, 0.0]]
    with pytest.raises(plugrad.errors.ShapeError, match="2-d Tensor"):
        nn.Embedding.from_pretrained(plugrad.ones(3))
    with pytest.raises(
        plugrad.errors.ShapeError, match=r"_weight must be a Tensor of shape \(4, 2\)"
    ):
        nn.Embedding(4, 2, _weight=table)
    with pytest.raises(ValueError, match="max_norm must be a positive number"):
        nn.functional.embedding(plugrad.tensor([0]), table, max_norm=-1.0)
    with pytest.raises(ValueError, match=r"embedding\(\): norm_type must be a number"):
        nn.functional.embedding(plugrad.tensor([0]), table, max_norm=1.0, norm_type="x")


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_losses_match_pytorch(backend, reduction) -> None:
    logits = images(6, 4)
    target = np.array([3, 0, 1, -100, 2, 2])
    weight = RNG.uniform(0.5, 1.5, 4).astype(np.float32)
    smoothing = {"reduction": reduction, "label_smoothing": 0.1}
    plain = {"reduction": reduction}
    pairs = [
        (
            nn.CrossEntropyLoss(plugrad.asarray(weight), **smoothing),
            torch.nn.CrossEntropyLoss(torch.tensor(weight), **smoothing),
            (logits, target),
        ),
        (nn.NLLLoss(reduction=reduction), torch.nn.NLLLoss(reduction=reduction), (logits, target)),
        (nn.MSELoss(**plain), torch.nn.MSELoss(**plain), (logits, images(6, 4))),
        (nn.L1Loss(**plain), torch.nn.L1Loss(**plain), (logits, images(6, 4))),
        (
            nn.SmoothL1Loss(reduction=reduction, beta=0.5),
            torch.nn.SmoothL1Loss(reduction=reduction, beta=0.5),
            (logits, images(6, 4)),
        ),
        (
            nn.BCELoss(plugrad.asarray(weight), reduction=reduction),
            torch.nn.BCELoss(torch.tensor(weight), reduction=reduction),
            (
                RNG.uniform(0.05, 0.95, (6, 4)).astype(np.float32),
                RNG.uniform(0, 1, (6, 4)).astype(np.float32),
            ),
        ),
        (
            nn.BCEWithLogitsLoss(reduction=reduction, pos_weight=plugrad.asarray(weight)),
            torch.nn.BCEWithLogitsLoss(reduction=reduction, pos_weight=torch.tensor(weight)),
            (logits, RNG.uniform(0, 1, (6, 4)).astype(np.float32)),
        ),
    ]
    for ours, theirs, inputs in pairs:
        same_outputs_and_gradients(ours, theirs, *inputs)


@pytest.mark.parametrize("momentum", [0.1, 0.3, None])
@pytest.mark.parametrize("track", [True, False])
def test_batch_norm_running_statistics_in_train_and_eval_are_pytorchs(momentum, track) -> None:
    ours = nn.BatchNorm2d(3, momentum=momentum, track_running_stats=track)
    theirs = torch.nn.BatchNorm2d(3, momentum=momentum, track_running_stats=track)
    with torch.no_grad():
        theirs.weight.uniform_(0.5, 1.5)
        theirs.bias.uniform_(-0.5, 0.5)
    copy_from(ours, theirs)
    for _ in range(3):
        batch = images(4, 3, 2, 2) * 2 + 1
        ours(plugrad.asarray(batch))
        theirs(torch.tensor(batch))
    assert set(ours.state_dict()) == set(theirs.state_dict())
    for key, value in theirs.state_dict().items():
        mine = ours.state_dict()[key]
        assert str(mine.dtype).split(".")[-1] == str(value.dtype).split(".")[-1], key
        np.testing.assert_allclose(mine.numpy(), value.numpy(), rtol=1e-5, err_msg=key)
    ours.eval()
    theirs.eval()
    same_outputs_and_gradients(ours, theirs, images(2, 3, 2, 2))


@pytest.mark.parametrize(
    "change",
    [
        lambda m: setattr(m, "track_running_stats", False),
        lambda m: (setattr(m, "running_mean", None), setattr(m, "running_var", None)),
        lambda m: setattr(m, "num_batches_tracked", None),
    ],
)
@pytest.mark.parametrize("momentum", [0.1, None])
def test_batch_norm_changed_after_it_was_made_acts_as_pytorchs(change, momentum) -> None:
    # The flag decided, not the buffers: track_running_stats = False after the layer was made
    # still moved the statistics in training and then ignored them in eval mode; buffers
    # set to None raised.
    ours = nn.BatchNorm1d(3, momentum=momentum)
    theirs = torch.nn.BatchNorm1d(3, momentum=momentum)
    copy_from(ours, theirs)
    change(ours)
    change(theirs)
    for _ in range(2):
        batch = images(4, 3) * 2 + 1
        ours(plugrad.asarray(batch))
        theirs(torch.tensor(batch))
    for key, value in theirs.state_dict().items():
        # (float32 statistics summed in another order: a few units in the last place)
        np.testing.assert_allclose(
            ours.state_dict()[key].numpy(), value.numpy(), rtol=1e-6, atol=1e-7
        )
    ours.eval()
    theirs.eval()
    same_outputs_and_gradients(ours, theirs, images(2, 3))


def test_batch_norm_refuses_what_pytorch_refuses() -> None:
    with pytest.raises(plugrad.errors.ShapeError, match="4-d input"):
        nn.BatchNorm2d(3)(plugrad.ones(2, 3))
    with pytest.raises(plugrad.errors.ShapeError, match="more than one value"):
        nn.BatchNorm1d(3)(plugrad.ones(1, 3))
    with pytest.raises(plugrad.errors.ArgumentError, match="running_mean"):
        nn.functional.batch_norm(plugrad.ones(2, 3), None, None)
    mean, var = plugrad.zeros(3), plugrad.ones(3)
    for bad, error in (
        (dict(running_mean=mean, running_var=None), plugrad.errors.ArgumentError),
        (dict(running_mean=None, running_var=var), plugrad.errors.ArgumentError),
        (dict(running_mean=mean, running_var=var, momentum=None), TypeError),
        (dict(running_mean=None, running_var=None, eps=0.0), ValueError),
    ):  # one running statistic was ignored; eps=0 gave NaN
        with pytest.raises(error):
            nn.functional.batch_norm(plugrad.ones(2, 3), training=True, **bad)
    assert mean.tolist() == [0.0] * 3 and var.tolist() == [1.0] * 3


SYNC_CASES = [
    ((4, 3), {}),
    ((4, 3, 5), {"momentum": None}),
    ((2, 3, 4, 2), {"affine": False}),
    ((2, 3, 2, 2, 3), {"track_running_stats": False}),
    ((3, 3, 2, 1, 2, 2), {"bias": False}),  # any rank: 6-d too
]


@pytest.mark.parametrize(("shape", "options"), SYNC_CASES)
def test_sync_batch_norm_without_a_group_is_pytorchs_and_batch_norm(shape, options) -> None:
    # PyTorch's SyncBatchNorm runs on the CPU while no process group is initialized: the
    # same values, gradients and running statistics, in training and in evaluation mode.
    ours, theirs = nn.SyncBatchNorm(3, **options), torch.nn.SyncBatchNorm(3, **options)
    if theirs.weight is not None:
        with torch.no_grad():
            theirs.weight.uniform_(0.5, 1.5)
    copy_from(ours, theirs)
    for _ in range(3):
        batch = images(*shape) * 2 + 1
        same_outputs_and_gradients(ours, theirs, batch)
        x = plugrad.asarray(batch)
        batch_norm = nn.functional.batch_norm(x, None, None, ours.weight, ours.bias, True)
        np.testing.assert_array_equal(ours(x).detach().numpy(), batch_norm.detach().numpy())
        theirs(torch.tensor(batch))
    assert list(ours.state_dict()) == list(theirs.state_dict())
    for key, value in theirs.state_dict().items():
        np.testing.assert_allclose(ours.state_dict()[key].numpy(), value.numpy(), rtol=1e-5)
    ours.eval()
    theirs.eval()
    same_outputs_and_gradients(ours, theirs, images(*shape))


def test_sync_batch_norm_is_made_and_printed_as_pytorchs() -> None:
    for options in ({}, {"affine": False}, {"bias": False}, {"momentum": None, "eps": 1e-3}):
        ours, theirs = nn.SyncBatchNorm(4, **options), torch.nn.SyncBatchNorm(4, **options)
        assert repr(ours) == repr(theirs)
        assert list(ours.state_dict()) == list(theirs.state_dict())
        assert [n for n, _ in ours.named_parameters()] == [n for n, _ in theirs.named_parameters()]
    assert isinstance(ours, nn.modules.batchnorm._BatchNorm)
    assert nn.SyncBatchNorm(2, dtype=plugrad.float64).running_var.dtype == plugrad.float64
    assert nn.modules.batchnorm.SyncBatchNorm is nn.SyncBatchNorm


@pytest.mark.parametrize("layer", ["BatchNorm1d", "BatchNorm2d", "SyncBatchNorm"])
def test_a_refused_batch_leaves_the_running_average_as_it_was(layer: str) -> None:
    # With momentum=None the count moved before F.batch_norm refused the batch (one value
    # per channel, another dtype): the next batches then weighed less than their share.
    norm = getattr(nn, layer)(2, momentum=None)
    theirs = getattr(torch.nn, layer)(2, momentum=None)
    rng = np.random.default_rng(0)
    extra = (1, 1) if layer == "BatchNorm2d" else ()
    for _ in range(3):
        batch = rng.standard_normal((4, 2, *extra)).astype(np.float32)
        norm(plugrad.asarray(batch))
        theirs(torch.tensor(batch))
        before = [b.numpy().copy() for b in norm.buffers()]
        for refused, error in (
            (plugrad.ones(1, 2, *extra), plugrad.errors.ShapeError),
            (plugrad.ones(4, 2, *extra, dtype=plugrad.float64), plugrad.errors.DtypeError),
        ):
            with pytest.raises(error):
                norm(refused)
            for was, buffer in zip(before, norm.buffers()):
                np.testing.assert_array_equal(buffer.numpy(), was)
    assert int(norm.num_batches_tracked) == 3
    for name in ("running_mean", "running_var"):
        ours, expected = getattr(norm, name).numpy(), getattr(theirs, name).detach().numpy()
        np.testing.assert_allclose(ours, expected, rtol=1e-5, atol=1e-6)


def test_sync_batch_norm_refuses_what_batch_norm_refuses() -> None:
    norm = nn.SyncBatchNorm(3)
    with pytest.raises(plugrad.errors.ShapeError, match=r"at least 2-d, got shape \(3,\)"):
        norm(plugrad.ones(3))
    with pytest.raises(plugrad.errors.ShapeError, match="expected 3 channels on axis 1"):
        norm(plugrad.ones(4, 2, 5))
    assert int(norm.num_batches_tracked) == 0 and norm.running_mean.tolist() == [0.0] * 3
    with pytest.raises(plugrad.errors.ShapeError, match="more than one value"):
        norm(plugrad.ones(1, 3))
    with pytest.raises(plugrad.errors.DtypeError, match="float64"):
        norm(plugrad.ones(2, 3, dtype=plugrad.float64))
    with pytest.raises(plugrad.errors.InvalidArgumentError, match="process_group"):
        nn.SyncBatchNorm(3, process_group="subgroup")
    for wrong in (None, 3, torch.nn.BatchNorm1d(3)):
        with pytest.raises(TypeError, match="convert_sync_batchnorm: module must be a plugrad"):
            nn.SyncBatchNorm.convert_sync_batchnorm(wrong)
    lazy = nn.Sequential(nn.Linear(2, 3), nn.LazyBatchNorm1d())
    with pytest.raises(plugrad.errors.UninitializedParameterError, match="run the model once"):
        nn.SyncBatchNorm.convert_sync_batchnorm(lazy)
    lazy(plugrad.ones(4, 2))  # once it has seen an input, it is a BatchNorm1d
    assert isinstance(nn.SyncBatchNorm.convert_sync_batchnorm(lazy)[1], nn.SyncBatchNorm)


def _to_convert(lib):
    """Batch norms of every kind, nested, frozen, in eval mode, beside an instance norm."""
    inner = lib.nn.Sequential(lib.nn.BatchNorm1d(3, bias=False), lib.nn.InstanceNorm1d(3))
    model = lib.nn.Sequential(
        lib.nn.Conv2d(2, 4, 3),
        lib.nn.BatchNorm2d(4, momentum=None),
        lib.nn.Flatten(2),
        lib.nn.BatchNorm1d(4, affine=False),
        lib.nn.ModuleDict({"deep": inner, "volume": lib.nn.BatchNorm3d(2, eps=1e-3)}),
    )
    model[1].weight.requires_grad_(False)
    inner[0].eval()
    return model


def test_convert_sync_batchnorm_replaces_what_pytorchs_replaces_keeping_the_tensors() -> None:
    ours, theirs = _to_convert(plugrad), _to_convert(torch)
    copy_from(ours, theirs)
    ours[1](plugrad.asarray(images(2, 4, 3, 3)))  # statistics that are not the initial ones
    theirs[1](torch.tensor(images(2, 4, 3, 3)))
    before = dict(ours.state_dict(keep_vars=True))
    parameters = dict(ours.named_parameters())
    converted = nn.SyncBatchNorm.convert_sync_batchnorm(ours)
    expected = torch.nn.SyncBatchNorm.convert_sync_batchnorm(theirs)
    assert converted is ours  # the containers are changed in place
    assert repr(converted) == repr(expected)
    kinds = [type(m).__name__ for m in converted.modules()]
    assert kinds == [type(m).__name__ for m in expected.modules()]
    assert kinds.count("SyncBatchNorm") == 4 and "InstanceNorm1d" in kinds
    assert list(converted.state_dict()) == list(expected.state_dict())
    for key, tensor in converted.state_dict(keep_vars=True).items():
        assert tensor is before[key], key  # the same tensors, not copies
    assert dict(converted.named_parameters()) == parameters
    assert converted[1].weight.requires_grad is False and converted[1].bias.requires_grad
    deep = converted[4]["deep"][0]
    assert deep.training is False and converted[1].training is True
    assert (deep.bias, converted[3].weight, converted[1].momentum) == (None, None, None)
    assert converted[4]["volume"].eps == 1e-3
    # a batch norm by itself becomes a new SyncBatchNorm; other modules are returned as they are
    norm = nn.BatchNorm2d(3)
    alone = nn.SyncBatchNorm.convert_sync_batchnorm(norm)
    assert type(alone) is nn.SyncBatchNorm and alone.weight is norm.weight
    assert alone.running_var is norm.running_var
    linear = nn.Linear(2, 2)
    assert nn.SyncBatchNorm.convert_sync_batchnorm(linear) is linear


def test_reprs_match_pytorch() -> None:
    for make in (
        lambda m: m.Linear(3, 2, bias=False),
        lambda m: m.Conv2d(3, 8, 3, stride=2, padding=1, groups=1, bias=False),
        lambda m: m.Conv2d(4, 8, (3, 1), dilation=2, groups=2),
        lambda m: m.MaxPool2d(2),
        lambda m: m.AvgPool2d(3, stride=1, padding=1),
        lambda m: m.LayerNorm((4, 5), eps=1e-6),
        lambda m: m.Embedding(10, 3, padding_idx=0),
        lambda m: m.GELU(approximate="tanh"),
        lambda m: m.SiLU(),
        lambda m: m.LeakyReLU(0.2),
        lambda m: m.ELU(),
        lambda m: m.BatchNorm1d(4),
        lambda m: m.BatchNorm1d(4, bias=False),
        lambda m: m.BatchNorm2d(3, eps=1e-3, momentum=None, affine=False),
        lambda m: m.Flatten(),
        lambda m: m.Sequential(m.Linear(2, 2), m.Sequential(m.ReLU(), m.Tanh())),
    ):
        assert repr(make(nn)) == repr(make(torch.nn))


# -- initialization -----------------------------------------------------------------------


def test_initialization_is_reproducible_with_the_seed() -> None:
    plugrad.manual_seed(3)
    first = nn.Sequential(nn.Linear(4, 3), nn.Conv2d(2, 3, 3), nn.Embedding(5, 2)).state_dict()
    plugrad.manual_seed(3)
    second = nn.Sequential(nn.Linear(4, 3), nn.Conv2d(2, 3, 3), nn.Embedding(5, 2)).state_dict()
    for name in first:
        np.testing.assert_array_equal(first[name].numpy(), second[name].numpy())
    assert not np.array_equal(
        first["0.weight"].detach().numpy(), nn.Linear(4, 3).weight.detach().numpy()
    )


def test_initial_values_follow_pytorchs_bounds() -> None:
    plugrad.manual_seed(0)
    layer = nn.Linear(400, 300)
    bound = 1 / math.sqrt(400)
    for p in (layer.weight, layer.bias):
        values = p.detach().numpy()
        assert values.min() >= -bound and values.max() <= bound
        assert values.max() > 0.9 * bound and values.min() < -0.9 * bound  # the whole range
    conv = nn.Conv2d(6, 4, (3, 2), groups=2)
    bound = 1 / math.sqrt(3 * 3 * 2)
    assert np.abs(conv.weight.detach().numpy()).max() <= bound
    assert np.abs(conv.bias.detach().numpy()).max() <= bound
    table = nn.Embedding(1000, 8, padding_idx=-1)
    assert table.padding_idx == 999
    np.testing.assert_array_equal(table.weight.detach().numpy()[999], 0.0)
    assert abs(table.weight.detach().numpy()[:999].std() - 1.0) < 0.05
    norm = nn.LayerNorm(5)
    assert norm.weight.tolist() == [1.0] * 5 and norm.bias.tolist() == [0.0] * 5


def test_layers_are_made_where_and_as_asked() -> None:
    layer = nn.Linear(3, 2, backend="array_api_strict", dtype=plugrad.float64)
    assert layer.weight.device.backend.name == "array_api_strict"
    assert layer.bias.dtype == plugrad.float64
    conv = nn.Conv2d(1, 2, 3, device="array_api_strict:1")
    assert conv.weight.device.name == "array_api_strict:1"
    x = plugrad.ones((1, 1, 4, 4), device="array_api_strict:1")
    assert conv(x).device is conv.weight.device
    with pytest.raises(plugrad.errors.DtypeError):
        nn.Linear(2, 2, dtype=plugrad.int32)


@pytest.mark.parametrize(
    "make",
    [
        lambda: nn.Linear(3, 2, devcie="cpu"),
        lambda: nn.Conv2d(1, 2, 3, dtpye=plugrad.float64),
        lambda: nn.LayerNorm(4, elementwise_affine=False, backnd="numpy"),
    ],
    ids=["Linear", "Conv2d", "LayerNorm-without-parameters"],
)
def test_a_misspelt_placement_keyword_is_refused(make) -> None:
    with pytest.raises(TypeError, match=r"unexpected keyword argument .*device=, dtype="):
        make()


def test_init_functions() -> None:
    init = nn.init
    w = plugrad.empty((20, 30), requires_grad=True)
    assert init.constant_(w, 0.5) is w and float(w.sum()) == 300.0
    assert w.requires_grad and w.grad_fn is None  # filled without recording
    generator = plugrad.Generator(seed=4)
    first = init.normal_(w, 1.0, 2.0, generator=generator).detach().numpy().copy()
    init.normal_(w, 1.0, 2.0, plugrad.Generator(seed=4))  # positional, as PyTorch takes it
    np.testing.assert_array_equal(w.detach().numpy(), first)
    init.uniform_(w, 0.0, 1.0, generator)
    init.kaiming_uniform_(w, 0.0, "fan_in", "relu", generator)
    # Complex tensors get each part drawn (a DtypeError from nextafter() escaped), as PyTorch's.
    parts = init.uniform_(plugrad.zeros(500, dtype=plugrad.complex64), 2.0, 3.0)
    assert parts.dtype == plugrad.complex64
    for part in (parts.real, parts.imag):
        assert 2.0 <= float(part.min()) and float(part.max()) < 3.0
    for dtype in (plugrad.bool, plugrad.int32, plugrad.complex64):  # all True, rounded, real
        with pytest.raises(plugrad.errors.DtypeError, match="real floating"):
            init.trunc_normal_(plugrad.zeros(3, dtype=dtype))
    init.xavier_uniform_(w, gain=init.calculate_gain("tanh"))
    assert np.abs(w.detach().numpy()).max() <= 5 / 3 * math.sqrt(6 / 50)
    init.kaiming_normal_(w, mode="fan_out", nonlinearity="relu")
    assert abs(w.detach().numpy().std() - math.sqrt(2 / 20)) < 0.05
    assert init.calculate_gain("leaky_relu") == math.sqrt(2 / (1 + 0.01**2))
    with pytest.raises(ValueError, match="unknown nonlinearity"):
        init.calculate_gain("swish")
    with pytest.raises(plugrad.errors.ShapeError, match="at least 2 axes"):
        init.xavier_uniform_(plugrad.empty(3))
    with pytest.raises(ValueError, match="mode"):
        init.kaiming_uniform_(w, mode="fan_avg")


@pytest.mark.parametrize(
    ("shape", "kernel", "stride", "padding", "output_size"),
    [
        ((2, 3, 6, 8), 2, None, 0, None),
        ((2, 3, 6, 7), 2, None, 0, (6, 7)),  # the odd width given back
        ((2, 3, 7, 7), 3, 2, 1, None),
        ((3, 6, 6), 2, 2, 0, (7, 6)),
        ((1, 1, 5, 5), 2, 2, 0, (1, 1, 5, 5)),  # the whole shape, as PyTorch takes it
    ],
)
def test_max_unpool_puts_the_maxima_back_as_pytorch(
    backend, shape, kernel, stride, padding, output_size
) -> None:
    _unpool_against_torch(2, images(*shape).astype(np.float64), kernel, stride, padding,
                          output_size)  # fmt: skip


def _unpool_against_torch(nd, x, kernel, stride, padding, output_size) -> None:
    """Pool ``x`` with indices in both libraries, unpool with ``MaxUnpool{nd}d`` and compare
    indices, repr, values and gradients bit for bit."""
    pool = f"max_pool{nd}d"
    values, indices = getattr(nn.functional, pool)(plugrad.asarray(x), kernel, stride, padding,
                                                   return_indices=True)  # fmt: skip
    expected_values, expected_indices = getattr(torch.nn.functional, pool)(
        torch.tensor(x), kernel, stride, padding, return_indices=True
    )
    np.testing.assert_array_equal(indices.numpy(), expected_indices.numpy())
    ours = getattr(nn, f"MaxUnpool{nd}d")(kernel, stride, padding)
    theirs = getattr(torch.nn, f"MaxUnpool{nd}d")(kernel, stride, padding)
    assert repr(ours) == repr(theirs)
    mine = plugrad.asarray(values.numpy(), requires_grad=True)
    reference = torch.tensor(expected_values.numpy(), requires_grad=True)
    out = ours(mine, indices, output_size=output_size)
    expected = theirs(reference, expected_indices, output_size=output_size)
    np.testing.assert_array_equal(out.detach().numpy(), expected.detach().numpy())
    weights = np.random.default_rng(3).standard_normal(tuple(expected.shape))
    out.backward(plugrad.asarray(weights))
    expected.backward(torch.tensor(weights))
    np.testing.assert_array_equal(mine.grad.numpy(), reference.grad.numpy())


@pytest.mark.parametrize(
    ("shape", "kernel", "stride", "padding", "output_size"),
    [
        ((2, 3, 4, 6, 4), 2, None, 0, None),
        ((2, 2, 5, 5, 7), (3, 2, 3), (2, 2, 2), (1, 0, 1), (5, 5, 7)),
        ((2, 5, 4, 5), 2, 2, 0, (5, 4, 5)),  # the odd sizes given back, unbatched
        ((1, 1, 4, 4, 4), 2, 2, 0, (1, 1, 5, 4, 5)),  # the whole shape
    ],
)
def test_max_unpool_3d_puts_the_maxima_back_as_pytorch(
    backend, shape, kernel, stride, padding, output_size
) -> None:
    x = np.random.default_rng(5).standard_normal(shape)
    _unpool_against_torch(3, x, kernel, stride, padding, output_size)


def test_max_unpool_3d_refuses_a_geometry_or_indices_that_do_not_fit() -> None:
    values, indices = nn.functional.max_pool3d(plugrad.ones(1, 1, 2, 2, 2), 2, return_indices=True)
    with pytest.raises(plugrad.errors.ShapeError, match=r"\(N, C, D, H, W\) or \(C, D, H, W\)"):
        nn.functional.max_unpool3d(values[0, 0], indices[0, 0], 2)
    with pytest.raises(ValueError, match=r"last three sizes \(D, H, W\)"):
        nn.functional.max_unpool3d(values, indices, 2, output_size=(2, 2))
    with pytest.raises(ValueError, match=r"max_unpool3d.*kernel_size"):
        nn.functional.max_unpool3d(values, indices, (2, 2))
    with pytest.raises(plugrad.errors.IndexOutOfRangeError, match=r"output volumes of 2 x 2 x 2"):
        nn.functional.max_unpool3d(values, indices + 8, 2)


def test_max_unpool_1d_and_what_it_refuses() -> None:
    x = images(2, 3, 9).astype(np.float64)
    values, indices = nn.functional.max_pool1d(plugrad.asarray(x), 3, 2, 1, return_indices=True)
    expected = torch.nn.functional.max_pool1d(torch.tensor(x), 3, 2, 1, return_indices=True)
    for size in (None, [10]):
        np.testing.assert_array_equal(
            nn.MaxUnpool1d(3, 2, 1)(values, indices, output_size=size).numpy(),
            torch.nn.MaxUnpool1d(3, 2, 1)(*expected, output_size=size).numpy(),
        )
    with pytest.raises(ValueError, match="within a stride"):
        nn.functional.max_unpool2d(values[None], indices[None], 2, output_size=(20, 20))
    with pytest.raises(plugrad.errors.IndexOutOfRangeError, match=r"\[0, 16\)"):
        nn.functional.max_unpool2d(
            plugrad.ones(1, 1, 2, 2), plugrad.tensor([[[[0, 1], [2, 99]]]]), 2
        )


@pytest.mark.parametrize(
    ("call", "error", "match"),
    [
        (
            lambda v, i: nn.functional.max_unpool1d(v, i[..., :1], 2),
            plugrad.errors.ShapeError,
            r"\(N, C, L\) or \(C, L\)",
        ),
        (
            lambda v, i: nn.functional.max_unpool1d(v[None], i[None], 2),
            plugrad.errors.ShapeError,
            r"\(N, C, L\)",
        ),
        (
            lambda v, i: nn.functional.max_unpool1d(v, i, 2, output_size=(1, 4)),
            ValueError,
            r"last size \(L\)",
        ),
        (
            lambda v, i: nn.MaxUnpool1d(2)(v, i, output_size=(1, 1, 9)),
            ValueError,
            r"within a stride \(2,\) of \(4,\)",
        ),
        (
            lambda v, i: nn.MaxUnpool1d(2)(v, i + 5),
            plugrad.errors.IndexOutOfRangeError,
            r"\[0, 4\) \(output rows of length 4\).*max_pool1d ",
        ),
        (lambda v, i: nn.functional.max_unpool1d(v, v, 2), plugrad.errors.DtypeError, "integers"),
        (
            lambda v, i: nn.functional.max_unpool1d(v, i, 1, padding=3),
            plugrad.errors.ShapeError,
            "empty",
        ),
    ],
)
def test_max_unpool_1d_errors_name_it_and_its_shapes(call, error, match) -> None:
    values, indices = nn.functional.max_pool1d(
        plugrad.tensor([[[1.0, 3.0, 2.0, 5.0]]]), 2, return_indices=True
    )
    with pytest.raises(error, match=match) as raised:
        call(values, indices)
    assert str(raised.value).startswith("max_unpool1d(): ")
    assert "2d" not in str(raised.value)


@pytest.mark.parametrize("norm_type", [2, 1, 3, 1.5, math.inf, -math.inf])
@pytest.mark.parametrize(
    ("make", "shape"),
    [
        (lambda m, p: m.LPPool2d(p, 2), (2, 3, 6, 6)),
        (lambda m, p: m.LPPool2d(p, 3, 2, ceil_mode=True), (2, 3, 7, 6)),
        (lambda m, p: m.LPPool2d(p, (2, 3), (1, 2)), (2, 3, 7, 6)),
        (lambda m, p: m.LPPool1d(p, 3, 2, ceil_mode=True), (2, 3, 9)),
        (lambda m, p: m.LPPool3d(p, 2), (2, 2, 4, 4, 4)),
        (lambda m, p: m.LPPool3d(p, (2, 3, 2), (1, 2, 2), ceil_mode=True), (1, 2, 5, 6, 5)),
    ],
)
def test_power_average_pools_match_pytorch(backend, norm_type, make, shape) -> None:
    ours, theirs = make(nn, norm_type), make(torch.nn, norm_type)
    assert repr(ours) == repr(theirs)
    x = np.abs(images(*shape)) + 0.1  # positive: x ** p is real for every p
    same_outputs_and_gradients(ours, theirs, x)


def test_linear_refuses_an_input_with_other_features_in_plugrads_words_on_every_backend():
    # JAX raised its own TypeError from dot_general; NumPy's ValueError was translated.
    layer = nn.Linear(3, 2)
    with pytest.raises(plugrad.errors.ShapeError, match=r"has 5 features, but the weight"):
        layer(plugrad.ones(2, 5))


@pytest.mark.parametrize("name", ["Softmax", "LogSoftmax", "Softmin"])
def test_softmax_layers_without_a_dim_say_what_they_need(name: str) -> None:
    # nn.Softmax() raised "__init__() missing 1 required positional argument".
    with pytest.raises(plugrad.errors.ArgumentError, match=f"{name}\\(\\) needs dim="):
        getattr(plugrad.nn, name)()
    assert getattr(plugrad.nn, name)(dim=0)(plugrad.tensor([0.0, 0.0])).shape == (2,)
