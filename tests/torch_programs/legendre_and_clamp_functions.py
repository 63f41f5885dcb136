"""Custom autograd Functions fitting sin with a Legendre polynomial, and gradcheck."""

import math

import torch


class LegendrePolynomial3(torch.autograd.Function):
    @staticmethod
    def forward(ctx, input):
        ctx.save_for_backward(input)
        return 0.5 * (5 * input**3 - 3 * input)

    @staticmethod
    def backward(ctx, grad_output):
        (input,) = ctx.saved_tensors
        return grad_output * 1.5 * (5 * input**2 - 1)


class MyClamp(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, low, high):
        ctx.save_for_backward(x)
        ctx.low, ctx.high = low, high
        return x.clamp(low, high)

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        mask = (x >= ctx.low) & (x <= ctx.high)
        return g * mask, None, None


def run(data):
    dtype = torch.float
    x = torch.linspace(-math.pi, math.pi, 200, dtype=dtype)
    y = torch.sin(x)
    a = torch.full((), 0.0, dtype=dtype, requires_grad=True)
    b = torch.full((), -1.0, dtype=dtype, requires_grad=True)
    c = torch.full((), 0.0, dtype=dtype, requires_grad=True)
    d = torch.full((), 0.3, dtype=dtype, requires_grad=True)
    lr = 5e-6
    out = []
    for t in range(200):
        P3 = LegendrePolynomial3.apply
        y_pred = a + b * P3(c + d * x)
        loss = (y_pred - y).pow(2).sum()
        if t % 50 == 49:
            out.append(loss.item())
        loss.backward()
        with torch.no_grad():
            a -= lr * a.grad
            b -= lr * b.grad
            c -= lr * c.grad
            d -= lr * d.grad
            a.grad = None
            b.grad = None
            c.grad = None
            d.grad = None
    out += [a.item(), b.item(), c.item(), d.item()]
    z = torch.tensor([-2.0, 0.5, 3.0], requires_grad=True)
    MyClamp.apply(z, -1.0, 1.0).sum().backward()
    out += z.grad.tolist()
    zz = torch.tensor([0.3, -0.2], dtype=torch.float64, requires_grad=True)
    out.append(float(torch.autograd.gradcheck(LegendrePolynomial3.apply, (zz,))))
    return out
