"""nn.utils.skip_init against PyTorch's: the module's tensors as its constructor makes them,
without their initialisation (nor its random draws)."""

from __future__ import annotations

import pytest

import plugrad
from plugrad.errors import ArgumentError, PlugradError

torch = pytest.importorskip("torch")


@pytest.mark.parametrize(
    ("name", "args", "kwargs"),
    [
        ("Linear", (3, 2), {}),
        ("Linear", (4, 5), {"bias": False, "dtype": "float64"}),
        ("Conv1d", (2, 3, 3), {}),
        ("BatchNorm1d", (3,), {}),
        ("Embedding", (5, 2), {}),
    ],
)
def test_skip_init_makes_the_module_with_torchs_tensors_and_draws_nothing(
    name: str, args: tuple, kwargs: dict
) -> None:
    # skip_init was missing.
    described = []
    for lib in (plugrad, torch):
        options = {k: getattr(lib, v) if k == "dtype" else v for k, v in kwargs.items()}
        lib.manual_seed(0)
        expected = lib.rand(4).tolist()
        lib.manual_seed(0)
        module = lib.nn.utils.skip_init(getattr(lib.nn, name), *args, **options)
        assert lib.rand(4).tolist() == expected  # the generator did not move
        described.append(
            sorted(
                (key, tuple(t.shape), str(t.dtype).split(".")[-1], t.requires_grad, kind)
                for kind, items in (("p", module.named_parameters()), ("b", module.named_buffers()))
                for key, t in items
            )
        )
        assert isinstance(module, getattr(lib.nn, name)) and module.training
    assert described[0] == described[1]


def test_skip_init_refuses_what_torch_refuses() -> None:
    for lib in (plugrad, torch):
        with pytest.raises(RuntimeError, match="device"):
            lib.nn.utils.skip_init(lib.nn.ReLU)
    with pytest.raises(PlugradError, match="takes no 'device' argument"):
        plugrad.nn.utils.skip_init(plugrad.nn.ReLU)
    with pytest.raises(ArgumentError, match="takes a Module class"):
        plugrad.nn.utils.skip_init(int)
