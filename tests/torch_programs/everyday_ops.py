"""topk, sort, gather, einsum with ..., cdist, unique, outer, addmm, scatter_reduce and more."""

import torch


def run(data):
    out = []
    x = torch.tensor([[0.3, -1.2, 2.2, 0.9], [1.5, 0.1, -0.4, 2.8]], requires_grad=True)
    vals, idx = torch.topk(x, 2, dim=1)
    s, order = torch.sort(x, dim=1, descending=True)
    g = torch.gather(x, 1, torch.tensor([[0, 0], [3, 1]]))
    e = torch.einsum("...i,...i->...", x, x)
    d = torch.cdist(x, x.flip(0))
    u, counts = torch.unique(torch.tensor([3, 1, 3, 2]), return_counts=True)
    o = torch.outer(x[0], x[1])
    mm = torch.addmm(torch.ones(2, 2), x, x.t(), beta=0.5)
    sr = torch.zeros(2, 3).scatter_reduce(
        1, torch.tensor([[0, 0], [2, 1]]), x[:, :2], "amax", include_self=False
    )
    loss = vals.sum() + s[:, 0].sum() + g.sum() + e.sum() + d.sum() + o.sum() + mm.sum() + sr.sum()
    loss.backward()
    out += x.grad.flatten().tolist()
    out += idx.flatten().tolist() + order[0].tolist() + u.tolist() + counts.tolist()
    out.append(loss.item())
    torch.manual_seed(0)
    out.append(torch.multinomial(torch.tensor([0.0, 1.0, 0.0]), 1).item())
    out.append(torch.nn.functional.relu6(torch.tensor([7.0])).item())
    y = torch.randn(4, 4)
    out.append(float(torch.linalg.norm(y) >= 0))
    out.append(torch.tril(torch.ones(3, 3)).sum().item())
    out.append(torch.diag(torch.tensor([1.0, 2.0])).sum().item())
    out.append(torch.std_mean(torch.tensor([1.0, 2.0, 3.0]))[1].item())
    out.append(torch.bmm(torch.ones(2, 2, 3), torch.ones(2, 3, 1)).sum().item())
    out.append(torch.clamp(torch.tensor([-1.0, 5.0]), 0, 1).sum().item())
    out.append(torch.argsort(torch.tensor([3, 1, 2]))[0].item())
    out.append(torch.tensor([0, 1, 1]).nonzero().shape[0])
    out.append(torch.numel(torch.ones(2, 5)))
    out.append(torch.meshgrid(torch.arange(2), torch.arange(3), indexing="ij")[0].shape[1])
    return out
