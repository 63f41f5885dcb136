"""print(model) shows the same text as PyTorch for the same layers."""

from __future__ import annotations

import pytest

import plugrad

torch = pytest.importorskip("torch")

LAYERS = [
    ("Linear", (2, 3), {}),
    ("Linear", (2, 3), {"bias": False}),
    ("Conv2d", (1, 2, 3), {}),
    ("Conv2d", (1, 2, 3), {"stride": 2, "padding": 1, "bias": False}),
    ("Conv2d", (1, 2, (3, 5)), {"dilation": 2}),
    ("ReLU", (), {}),
    ("ReLU", (), {"inplace": True}),
    ("Dropout", (), {}),
    ("Dropout", (0.25,), {"inplace": True}),
    ("GELU", (), {"approximate": "tanh"}),
    ("Tanh", (), {}),
    ("Sigmoid", (), {}),
    ("Softmax", (), {"dim": 1}),
    ("LogSoftmax", (), {"dim": 1}),
    ("Flatten", (), {}),
    ("LayerNorm", (3,), {}),
    ("LayerNorm", ((3, 4),), {"elementwise_affine": False}),
    ("Embedding", (10, 3), {"padding_idx": 0}),
    ("MaxPool2d", (3,), {"stride": 1, "padding": 1}),
    ("AvgPool2d", (2,), {}),
    ("MSELoss", (), {}),
    ("CrossEntropyLoss", (), {}),
    ("NLLLoss", (), {}),
    ("BCEWithLogitsLoss", (), {}),
]


@pytest.mark.parametrize(("name", "args", "kwargs"), LAYERS, ids=lambda v: str(v))
def test_a_layer_prints_as_in_pytorch(name, args, kwargs) -> None:
    ours = getattr(plugrad.nn, name)(*args, **kwargs)
    theirs = getattr(torch.nn, name)(*args, **kwargs)
    assert repr(ours) == repr(theirs)


def model(nn):
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.blocks = nn.ModuleList(
                [nn.Linear(4, 4) for _ in range(3)]
                + [nn.ReLU()]
                + [nn.Sequential(nn.Tanh(), nn.Linear(4, 4)) for _ in range(2)]
            )
            self.empty = nn.ModuleList()
            self.head = nn.Sequential(nn.Flatten(), nn.Linear(4, 1))

    return Net()


def test_a_module_tree_prints_as_in_pytorch_with_repeated_layers_collapsed() -> None:
    text = repr(model(plugrad.nn))
    assert text == repr(model(torch.nn))
    assert "(0-2): 3 x Linear(in_features=4, out_features=4, bias=True)" in text
