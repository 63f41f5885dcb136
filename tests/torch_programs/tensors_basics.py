"""Tensors: creation, arithmetic, indexing, shapes, dtypes and NumPy interop."""

import numpy as np
import torch


def run(data):
    x = torch.tensor(data["x"][:2], dtype=torch.float32)
    ones = torch.ones_like(x)
    zeros = torch.zeros(2, 3)
    rand_shape = torch.rand(2, 3).shape
    y = x * 2 + ones
    y[:, 1] = 0
    joined = torch.cat([x, y], dim=1)
    stacked = torch.stack([x, y])
    counts = torch.arange(6).reshape(2, 3)
    as_float = counts.float() / 2
    mixed = x + counts  # float32 with int64 stays float32
    from_numpy = torch.from_numpy(np.array([1.0, 2.0, 3.0]))
    agg = x.sum(dim=1, keepdim=True)
    out = [
        float(y.sum()),
        float(joined.mean()),
        float(stacked.sum()),
        float(as_float.sum()),
        float(mixed.sum()),
        float(from_numpy.sum()),
        float(agg.sum()),
        float((x @ x.T).sum()),
        float(x.exp().log().sum()),
        float(zeros.sum()),
        float(len(rand_shape)),
        float(x[0, 0].item()),
        float(x.abs().max()),
        float(mixed.dtype == torch.float32),
        float((counts / 4).dtype == torch.float32),
    ]
    return out
