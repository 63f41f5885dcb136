"""Tensors: creation, views, reductions with dim, masks, in-place updates and NumPy interop."""

import numpy as np
import torch


def run(data):
    out = []
    x = torch.arange(12, dtype=torch.float32).reshape(3, 4)
    y = torch.linspace(-1, 1, steps=4)
    z = x * y + torch.eye(3, 4)
    out.append(z.sum().item())
    out.append(torch.cat([x, z], dim=0).mean(dim=1, keepdim=True).sum().item())
    out.append(torch.stack([x, z]).std().item())
    out.append(x.T.contiguous().view(-1)[5].item())
    w = torch.where(z > 2, z, torch.zeros_like(z))
    out.append(w.argmax().item())
    out.append(w.argmax(dim=1).tolist()[0])
    z[z < 0] = 0
    out.append(z.clamp(max=5).sum().item())
    out.append(torch.tensor([[1, 2], [3, 4]]).float().pow(2).sum().item())
    t = torch.ones(2, 3, dtype=torch.float64) * 0.5
    out.append(t.numpy().sum())
    a = torch.from_numpy(np.arange(6.0)).reshape(2, 3)
    out.append((a @ a.t()).trace().item())
    out.append(torch.max(x, 1)[0].sum().item())
    out.append(x.unsqueeze(0).expand(2, 3, 4).sum().item())
    out.append(int(x.numel()) + x.dim() + x.size(1) + len(x.shape))
    out.append(torch.zeros(2, 2).add_(3).mul_(2).sum().item())
    out.append(x.masked_fill(x > 5, -1.0).sum().item())
    out.append(x[:, 1::2].flatten().sum().item())
    out.append(float(torch.allclose(x, x + 1e-9)))
    out.append(x.new_ones(3).sum().item() + x.abs().max().item())
    out.append(torch.full((2, 2), 7.0).sum().item())
    out.append(torch.randn(3, 4).shape[1])
    out.append(x.chunk(2, dim=1)[1].sum().item())
    out.append(torch.tensor(3.5).item())
    out.append(x.split([1, 3], dim=1)[1].sum().item())
    out.append(torch.logical_and(x > 2, x < 8).sum().item())
    out.append(x.to(torch.int64).sum().item())
    out.append(torch.tensor([1.0, float("nan")]).isnan().sum().item())
    out.append(x.prod(dim=0)[1].item())
    out.append(torch.cumsum(x, dim=1)[2, 3].item())
    return out
