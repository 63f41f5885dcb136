"""Custom autograd Functions: a Legendre polynomial P3 fitting sin(x) as in the tutorial, in
float64 and float32, a clamp with its own backward, and gradcheck."""

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


def fit_sin(dtype, steps, every):
    """Fit a + b * P3(c + d * x) to sin(x) by hand-written gradient descent; every
    `every`-th loss, then the coefficients."""
    x = torch.linspace(-math.pi, math.pi, 200, dtype=dtype)
    y = torch.sin(x)
    a = torch.full((), 0.0, dtype=dtype, requires_grad=True)
    b = torch.full((), -1.0, dtype=dtype, requires_grad=True)
    c = torch.full((), 0.0, dtype=dtype, requires_grad=True)
    d = torch.full((), 0.3, dtype=dtype, requires_grad=True)
    learning_rate = 5e-6
    out = []
    for t in range(steps):
        P3 = LegendrePolynomial3.apply
        y_pred = a + b * P3(c + d * x)
        loss = (y_pred - y).pow(2).sum()
        if t % every == every - 1:
            out.append(loss.item())
        loss.backward()
        with torch.no_grad():
            a -= learning_rate * a.grad
            b -= learning_rate * b.grad
            c -= learning_rate * c.grad
            d -= learning_rate * d.grad
            a.grad = None
            b.grad = None
            c.grad = None
            d.grad = None
    return [*out, a.item(), b.item(), c.item(), d.item()]


def run(data):
    out = fit_sin(torch.float64, 30, 1) + fit_sin(torch.float, 200, 50)
    z = torch.tensor([-2.0, 0.5, 3.0], requires_grad=True)
    MyClamp.apply(z, -1.0, 1.0).sum().backward()
    out += z.grad.tolist()
    zz = torch.tensor([0.3, -0.2], dtype=torch.float64, requires_grad=True)
    out.append(float(torch.autograd.gradcheck(LegendrePolynomial3.apply, (zz,))))
    return out
