"""Autograd: retain_grad, grad with create_graph, hooks, no_grad, enable_grad and jacobian."""

import torch


def run(data):
    out = []
    x = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = x * 2
    y.retain_grad()
    z = (y**2).sum()
    z.backward()
    out += x.grad.tolist() + y.grad.tolist()
    x.grad.zero_()
    (x**3).sum().backward()
    out += x.grad.tolist()
    (g,) = torch.autograd.grad((x**3).sum(), x, create_graph=True)
    (g2,) = torch.autograd.grad(g.sum(), x)
    out += g2.tolist()
    seen = []
    h = x.register_hook(lambda grad: seen.append(grad.sum().item()))
    (x * 5).sum().backward()
    h.remove()
    out += seen
    w = torch.randn(3, requires_grad=True)
    with torch.no_grad():
        v = w * 2
    out.append(float(v.requires_grad))
    d = x.detach()
    out.append(float(d.requires_grad))
    a = torch.ones(2, 2, requires_grad=True)
    b = a + 2
    c = b * b * 3
    c.mean().backward()
    out += a.grad.flatten().tolist()
    q = torch.tensor([2.0], requires_grad=True)
    r = q.exp().log().sin()
    r.backward()
    out.append(q.grad.item())
    out.append(float(r.grad_fn is not None))
    out.append(float(q.is_leaf) + float(r.is_leaf))
    m = torch.tensor([1.0, 2.0], requires_grad=True)
    m2 = m.clone()
    m2.backward(torch.tensor([1.0, 1.0]))
    out += m.grad.tolist()
    with torch.enable_grad():
        k = m * 2
    out.append(float(k.requires_grad))
    torch.set_grad_enabled(False)
    out.append(float((m * 2).requires_grad))
    torch.set_grad_enabled(True)
    jac = torch.autograd.functional.jacobian(lambda t: t**2, torch.tensor([1.0, 2.0]))
    out += jac.flatten().tolist()
    return out
