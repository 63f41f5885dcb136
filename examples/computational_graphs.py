"""The computational-graph examples people learn autograd from, run with plugrad.

Run it with ``python examples/computational_graphs.py``.
"""

from __future__ import annotations

import math

import plugrad


def show_graph(tensor: plugrad.Tensor, names: dict[int, str]) -> None:
    """Print the backward graph behind ``tensor`` as a tree (leaves by their names)."""

    def label(node_or_leaf: object) -> str:
        if isinstance(node_or_leaf, plugrad.Tensor):
            return f"{names.get(id(node_or_leaf), 'leaf')}  (leaf, grad goes to .grad)"
        return node_or_leaf.name()

    stack = [(tensor.grad_fn, "", "")]
    while stack:
        node, prefix, branch = stack.pop()
        print(f"{prefix}{branch}{label(node)}")
        if isinstance(node, plugrad.Tensor):
            continue
        children = [edge[0] for edge in node.next_functions if edge is not None]
        child_prefix = prefix + ("    " if branch == "└── " else "│   " if branch else "")
        for i, child in reversed(list(enumerate(children))):
            stack.append((child, child_prefix, "└── " if i == len(children) - 1 else "├── "))


def section(title: str) -> None:
    print(f"\n== {title} " + "=" * (70 - len(title)))


section("1. e = a*b + log(d)*c")
a = plugrad.tensor(2.0, requires_grad=True)
b = plugrad.tensor(3.0, requires_grad=True)
c = plugrad.tensor(4.0, requires_grad=True)
d = plugrad.tensor(5.0, requires_grad=True)
u = a * b
t = plugrad.log(d)
v = t * c
e = u + v
print(f"e = {e}")
print(f"u.grad_fn = {u.grad_fn}, t.grad_fn = {t.grad_fn}, e.grad_fn = {e.grad_fn}")
print(f"a.is_leaf = {a.is_leaf}, u.is_leaf = {u.is_leaf}")
show_graph(e, {id(a): "a", id(b): "b", id(c): "c", id(d): "d"})
e.backward()
for name, leaf, expected, formula in [
    ("a", a, 3.0, "b"),
    ("b", b, 2.0, "a"),
    ("c", c, math.log(5.0), "log(d)"),
    ("d", d, 4.0 / 5.0, "c/d"),
]:
    print(f"de/d{name} = {leaf.grad.item():.6f}   (analytic {formula} = {expected:.6f})")
    assert math.isclose(leaf.grad.item(), expected, rel_tol=1e-6)

section("2. y = 2x + 3; z = 4y - 1")
x = plugrad.tensor([1.0, 2.0, 3.0], requires_grad=True)
y = 2 * x + 3
z = 4 * y - 1
z.sum().backward()
print(f"x.grad = {x.grad}   (dz/dx = 4 * 2 = 8)")
assert x.grad.tolist() == [8.0, 8.0, 8.0]

section("3. a non-scalar output: L = 10 - d")
plugrad.manual_seed(0)
w1, w2, w3, w4 = (plugrad.randn(3, requires_grad=True) for _ in range(4))
dd = (w1 * w2 + w3) * w4
L = 10 - dd
print(f"L = {L}")
try:
    L.backward()
except RuntimeError as error:
    print(f"L.backward() raises {type(error).__name__}: {error}")
L.backward(plugrad.ones_like(L), retain_graph=True)
by_ones = w1.grad
w1.grad = None
L.sum().backward()
print(f"w1.grad via L.backward(ones)  = {by_ones}")
print(f"w1.grad via L.sum().backward() = {w1.grad}")
assert by_ones.tolist() == w1.grad.tolist()

section("4. one gradient-descent step")
lr = 0.1
with plugrad.no_grad():
    w1_new = w1 - lr * w1.grad
print(f"w1 - lr * w1.grad = {w1_new}  (requires_grad={w1_new.requires_grad})")


section("5. a custom Function")


class Sigmoid(plugrad.Function):
    @staticmethod
    def forward(ctx, x):
        result = 1 / (1 + plugrad.exp(-x))
        ctx.save_for_backward(result)
        return result

    @staticmethod
    def backward(ctx, grad):
        (result,) = ctx.saved_tensors
        return grad * result * (1 - result)


s = plugrad.tensor([0.0, 2.0], requires_grad=True)
out = Sigmoid.apply(s)
print(f"Sigmoid.apply(s) = {out}")
out.sum().backward()
print(f"s.grad = {s.grad}   (sigmoid' = s(1-s): 0.25 at 0)")


section("6. no_grad as a decorator")


@plugrad.no_grad()
def predict(inputs: plugrad.Tensor) -> plugrad.Tensor:
    return inputs * w1


print(f"predict(x).requires_grad = {predict(x).requires_grad}")
print("\nAll examples ran and matched their analytic gradients.")
