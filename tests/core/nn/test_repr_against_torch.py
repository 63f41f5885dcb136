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
    ("Conv3d", (1, 2, (3, 5, 1)), {"dilation": 2, "padding_mode": "reflect", "padding": 1}),
    ("ConvTranspose3d", (4, 2, 3), {"groups": 2, "output_padding": (1, 0, 0), "stride": 2}),
    ("MaxPool3d", (3, 2, 1), {"ceil_mode": True}),
    ("AvgPool3d", ((2, 3, 2),), {"divisor_override": 2}),
    ("AdaptiveAvgPool3d", ((2, None, 3),), {}),
    ("AdaptiveMaxPool3d", (2,), {"return_indices": True}),
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
    ("Conv2d", (2, 4, 3), {"padding": "same", "padding_mode": "reflect"}),
    ("Conv2d", (2, 4, 3), {"padding": "valid", "groups": 2}),
    ("Conv1d", (2, 4, 3), {}),
    ("Conv1d", (2, 4, 3), {"padding": "same", "padding_mode": "circular", "bias": False}),
    ("Conv1d", (2, 4, (5,)), {"stride": 2, "padding": 1, "dilation": 2}),
    ("ConvTranspose1d", (2, 4, 3), {"stride": 2, "output_padding": 1}),
    ("ConvTranspose2d", (2, 4, 3), {"groups": 2, "dilation": 2, "bias": False}),
    ("ConvTranspose2d", (2, 4, (3, 2)), {"padding": (1, 0)}),
    ("MaxPool1d", (3,), {"stride": 1, "padding": 1}),
    ("AvgPool1d", (3,), {}),
    ("AvgPool1d", (3, 2, 1), {}),
    ("AdaptiveAvgPool1d", (4,), {}),
    ("AdaptiveMaxPool1d", (4, True), {}),
    ("AdaptiveMaxPool2d", ((2, None),), {}),
    ("GroupNorm", (2, 4), {}),
    ("GroupNorm", (2, 4), {"affine": False}),
    ("InstanceNorm1d", (3,), {}),
    ("InstanceNorm2d", (3,), {"affine": True, "track_running_stats": True}),
    ("RMSNorm", (3,), {}),
    ("RMSNorm", ([2, 3],), {"eps": 1e-3, "elementwise_affine": False}),
    ("LocalResponseNorm", (3,), {}),
    ("PixelShuffle", (2,), {}),
    ("PixelUnshuffle", (2,), {}),
    ("Upsample", (), {"scale_factor": 2}),
    ("Upsample", (), {"size": (3, 4), "mode": "bilinear", "align_corners": True}),
    ("Upsample", (3,), {}),
    ("UpsamplingNearest2d", (), {"scale_factor": 2}),
    ("UpsamplingBilinear2d", (4,), {}),
    ("ZeroPad1d", (2,), {}),
    ("ZeroPad2d", ((1, 2, 3, 4),), {}),
    ("ZeroPad3d", (1,), {}),
    ("ConstantPad1d", (2, 3.5), {}),
    ("ConstantPad2d", (1, 0), {}),
    ("ConstantPad3d", (1, 2.0), {}),
    ("ReflectionPad1d", (2,), {}),
    ("ReflectionPad2d", (1,), {}),
    ("ReflectionPad3d", (1,), {}),
    ("ReplicationPad1d", ((1, 2),), {}),
    ("ReplicationPad2d", (1,), {}),
    ("ReplicationPad3d", (1,), {}),
    ("CircularPad1d", (1,), {}),
    ("CircularPad2d", (1,), {}),
    ("CircularPad3d", (1,), {}),
    ("Fold", (4, 2), {}),
    ("Unfold", ((2, 3),), {"padding": 1}),
    ("MSELoss", (), {}),
    ("CrossEntropyLoss", (), {}),
    ("NLLLoss", (), {}),
    ("BCEWithLogitsLoss", (), {}),
    ("Identity", (3,), {"unused": True}),
    ("Unflatten", (1, (2, 5)), {}),
    ("Unflatten", (-1, [2, -1]), {}),
    ("PReLU", (), {}),
    ("PReLU", (3, 0.1), {}),
    ("GLU", (), {}),
    ("GLU", (1,), {}),
    ("Softmax2d", (), {}),
    ("Softmin", (), {"dim": 1}),
    ("Softsign", (), {}),
    ("LogSigmoid", (), {}),
    ("Softshrink", (), {}),
    ("Hardshrink", (0.3,), {}),
    ("Tanhshrink", (), {}),
    ("Threshold", (0.1, 2.0), {}),
    ("CosineSimilarity", (), {"dim": 0}),
    ("PairwiseDistance", (1.0,), {}),
    ("Dropout1d", (), {}),
    ("Dropout2d", (0.2, True), {}),
    ("Dropout3d", (), {}),
    ("AlphaDropout", (0.1,), {}),
    ("FeatureAlphaDropout", (), {}),
    ("HuberLoss", (), {"delta": 2.0}),
    ("KLDivLoss", (), {"reduction": "batchmean"}),
    ("MarginRankingLoss", (), {}),
    ("HingeEmbeddingLoss", (), {}),
    ("SoftMarginLoss", (), {}),
    ("CosineEmbeddingLoss", (), {}),
    ("TripletMarginLoss", (), {"swap": True}),
    ("PoissonNLLLoss", (), {}),
    ("GaussianNLLLoss", (), {"full": True}),
    ("MultiLabelSoftMarginLoss", (), {}),
    ("MultiMarginLoss", (), {}),
    ("MultiheadAttention", (8, 2), {}),
    ("MultiheadAttention", (8, 2), {"kdim": 3, "bias": False, "batch_first": True}),
    ("TransformerEncoderLayer", (8, 2, 16), {}),
    ("TransformerDecoderLayer", (8, 2, 16), {"activation": "gelu", "norm_first": True}),
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
            self.heads = nn.ModuleDict({"a": nn.Identity(), "b": nn.PReLU(4)})
            self.unflatten = nn.Unflatten(1, (2, 2))

    return Net()


def test_a_module_tree_prints_as_in_pytorch_with_repeated_layers_collapsed() -> None:
    text = repr(model(plugrad.nn))
    assert text == repr(model(torch.nn))
    assert "(0-2): 3 x Linear(in_features=4, out_features=4, bias=True)" in text
