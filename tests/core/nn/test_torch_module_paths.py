"""``plugrad.nn.modules``: PyTorch's import paths of the layers, for code that uses them."""

from __future__ import annotations

import importlib

import pytest

import plugrad
from plugrad import nn

PATHS = [
    "activation", "batchnorm", "channelshuffle", "container", "conv", "distance", "dropout",
    "flatten", "fold", "instancenorm", "lazy", "linear", "loss", "module", "normalization",
    "padding", "pixelshuffle", "pooling", "rnn", "sparse", "transformer", "upsampling",
]  # fmt: skip


def test_a_custom_loss_and_a_weight_decay_split_written_for_pytorch_run():
    from plugrad.nn.modules.activation import MultiheadAttention
    from plugrad.nn.modules.loss import _Loss

    class Half(_Loss):
        def forward(self, input, target):
            return 0.5 * (input - target).abs().mean()

    assert Half()(plugrad.ones(2), plugrad.zeros(2)).item() == 0.5
    model = nn.Sequential(nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4), nn.Flatten(), nn.LazyLinear(2))
    norms = [m for m in model.modules() if isinstance(m, nn.modules.batchnorm._BatchNorm)]
    convs = [m for m in model.modules() if isinstance(m, nn.modules.conv._ConvNd)]
    assert norms == [model[1]] and convs == [model[0]]
    assert MultiheadAttention is nn.MultiheadAttention
    assert nn.modules.module.Module is nn.Module


@pytest.mark.parametrize("path", PATHS)
def test_each_path_holds_the_classes_pytorchs_holds_that_plugrad_has(path):
    ours = importlib.import_module(f"plugrad.nn.modules.{path}")
    torch = pytest.importorskip("torch")
    theirs = importlib.import_module(f"torch.nn.modules.{path}")
    names = [
        name for name, value in vars(theirs).items()
        if isinstance(value, type) and value.__module__ == theirs.__name__
        and hasattr(nn, name) and not name.startswith("_")
    ]  # fmt: skip
    assert names, f"torch.nn.modules.{path} shares no layer with plugrad.nn"
    for name in names:
        assert getattr(ours, name) is getattr(nn, name), name
    assert torch  # the oracle ran


def test_data_parallel_wraps_as_pytorchs_does_without_gpus_and_its_checkpoints_load() -> None:
    import warnings

    from plugrad.nn.modules.utils import _pair, _triple, consume_prefix_in_state_dict_if_present
    from plugrad.utils.data.distributed import DistributedSampler

    torch = pytest.importorskip("torch")
    assert DistributedSampler is plugrad.utils.data.DistributedSampler
    assert (_pair(3), _pair([1, 2]), _triple(2)) == ((3, 3), (1, 2), (2, 2, 2))
    results = []
    for lib in (plugrad, torch):
        lib.manual_seed(0)
        model = lib.nn.DataParallel(lib.nn.Sequential(lib.nn.Linear(3, 4), lib.nn.ReLU()))
        state = model.state_dict()
        keys = list(state)
        lib.nn.modules.utils.consume_prefix_in_state_dict_if_present(state, "module.")
        plain = lib.nn.Sequential(lib.nn.Linear(3, 4), lib.nn.ReLU())
        plain.load_state_dict(state)
        x = lib.ones(2, 3)
        same = bool((plain(x) == model(x)).all())
        results.append((keys, list(state), sorted(state._metadata), same, repr(model)))
    assert results[0] == results[1]
    assert consume_prefix_in_state_dict_if_present is (
        plugrad.nn.modules.utils.consume_prefix_in_state_dict_if_present
    )
    with pytest.warns(UserWarning, match="its own device only"):
        plugrad.nn.DataParallel(plugrad.nn.Linear(1, 1), device_ids=[0, 1])
    with pytest.raises(TypeError, match="wraps a Module"):
        plugrad.nn.DataParallel(lambda x: x)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        plugrad.nn.parallel.DataParallel(plugrad.nn.Linear(1, 1), device_ids=[0])


def test_buffers_made_with_nn_buffer_register_on_assignment_as_pytorchs_do() -> None:
    torch = pytest.importorskip("torch")
    results = []
    for lib in (plugrad, torch):

        class Counter(lib.nn.Module):
            def __init__(self, lib=lib):
                super().__init__()
                self.calls = lib.nn.Buffer(lib.zeros(()))
                self.scratch = lib.nn.Buffer(lib.zeros(2), persistent=False)
                self.w = lib.nn.Parameter(lib.ones(2))

        module = Counter()
        buffer = lib.nn.Buffer(lib.ones(2, requires_grad=True))
        seen = [
            [name for name, _ in module.named_buffers()],
            list(module.state_dict()),
            isinstance(buffer, lib.nn.Buffer),
            isinstance(lib.ones(1), lib.nn.Buffer),
            type(buffer).__name__,
            buffer.requires_grad and buffer.is_leaf,
        ]
        module.register_buffer("scratch", lib.zeros(2), persistent=True)  # persistent again
        module.calls = lib.ones(())  # a plain tensor into a buffer's name: still the buffer
        seen += [list(module.state_dict()), module.calls.tolist()]
        results.append(seen)
    assert results[0] == results[1]
    assert results[0][1] == ["w", "calls"] and results[0][6] == ["w", "calls", "scratch"]
    with pytest.raises(TypeError, match="Buffer\\(\\) takes a Tensor"):
        plugrad.nn.Buffer([1.0])
