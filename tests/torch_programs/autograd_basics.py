"""Autograd: requires_grad, backward, .grad, no_grad and detach on a one-layer model."""

import torch


def run(data):
    x = torch.tensor(data["x"], dtype=torch.float32)
    y = torch.tensor(data["labels"], dtype=torch.float32)
    w = torch.tensor(data["w"], dtype=torch.float32).T.contiguous().requires_grad_()
    b = torch.zeros(1, requires_grad=True)
    z = torch.matmul(x, w) + b
    loss = torch.nn.functional.binary_cross_entropy_with_logits(z, y)
    loss.backward()
    out = [loss.item(), float(w.grad.sum()), float(b.grad.sum())]
    with torch.no_grad():
        z2 = torch.matmul(x, w) + b
    out.append(float(z2.requires_grad))
    z3 = (torch.matmul(x, w) + b).detach()
    out.append(float(z3.requires_grad))
    inp = torch.eye(4, 5, requires_grad=True)
    result = (inp + 1).pow(2).t()
    result.backward(torch.ones_like(result), retain_graph=True)
    out.append(float(inp.grad.sum()))
    inp.grad.zero_()
    result.backward(torch.ones_like(result))
    out.append(float(inp.grad.sum()))
    return out
