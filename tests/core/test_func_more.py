"""plugrad.func against torch.func: randomness with any generator, in-place changes of
arguments passed whole, empty batches, named tuples, pytree primals of jvp, forward mode
through integer outputs, argnums and out_dims checks."""

from __future__ import annotations

import collections

import numpy as np
import pytest

import plugrad
from plugrad import func

torch = pytest.importorskip("torch")

# torch.func itself uses a deprecated torch.jit API internally.
pytestmark = pytest.mark.filterwarnings(
    "ignore:`torch.jit.script` is deprecated:DeprecationWarning"
)

P = collections.namedtuple("P", "w b")
ROWS = [[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]


def libraries():
    return ((torch, torch.func), (plugrad, plugrad.func))


def same_state(a, b) -> bool:
    return str(a.state) == str(b.state)


def test_vmap_randomness_holds_for_a_generator_passed_in() -> None:
    # "same" gave each slice its own numbers from g, and "error" let g's draws through.
    def check(lib, transforms):
        x = lib.zeros(4, 3)
        g = lib.Generator().manual_seed(3)
        out = transforms.vmap(lambda r: r + lib.randn(3, generator=g), randomness="same")(x)
        fresh = lib.Generator().manual_seed(3)
        one_draw = lib.randn(3, generator=fresh)
        assert all(bool((row == one_draw).all()) for row in out), lib.__name__
        # g is left where one draw leaves it, as torch.func's
        assert bool((lib.rand(2, generator=g) == lib.rand(2, generator=fresh)).all())
        different = transforms.vmap(
            lambda r: r + lib.randn(3, generator=g), randomness="different"
        )(x)
        assert bool((different[0] != different[1]).any())

    for lib, transforms in libraries():
        check(lib, transforms)
    g = plugrad.Generator().manual_seed(3)
    before = g.get_state()
    with pytest.raises(plugrad.errors.InvalidArgumentError, match="randomness='error'"):
        func.vmap(lambda r: r + plugrad.randn(3, generator=g))(plugrad.zeros(4, 3))
    assert same_state(g.get_state(), before)


def test_vmap_refuses_a_draw_before_it_is_made() -> None:
    # The default generator's draw was made, then refused: the stream had moved on
    # (torch.func refuses it before drawing).
    plugrad.manual_seed(0)
    before = plugrad.get_rng_state()
    with pytest.raises(plugrad.errors.InvalidArgumentError, match="randomness"):
        func.vmap(lambda r: r + plugrad.rand(3))(plugrad.zeros(2, 3))
    assert same_state(plugrad.get_rng_state(), before)


@pytest.mark.parametrize(
    ("outer", "inner"), [("same", "different"), ("different", "same"), ("same", "error")]
)
def test_nested_vmaps_randomness_as_torch(outer, inner) -> None:
    # (from a generator passed in: "same" held for the default one only)
    def run(lib, transforms):
        g = lib.Generator().manual_seed(0)
        inner_map = transforms.vmap(lambda a: a + lib.randn((), generator=g), randomness=inner)
        try:
            out = transforms.vmap(inner_map, randomness=outer)(lib.zeros(2, 3))
        except (RuntimeError, plugrad.errors.InvalidArgumentError):
            return "refused"
        return bool((out[0] == out[1]).all()), bool((out[:, 0] == out[:, 1]).all())

    assert run(torch, torch.func) == run(plugrad, plugrad.func)


def test_vmap_refused_change_in_place_leaves_the_argument_as_it_was() -> None:
    # Slice 0's write was made before the refusal: b came back [11, 22].
    x = plugrad.tensor(ROWS)
    b = plugrad.tensor([10.0, 20.0])
    version = b._version
    with pytest.raises(plugrad.errors.InvalidArgumentError, match="argument 1 in place"):
        func.vmap(lambda r, b: b.add_(r), in_dims=(0, None))(x, b)
    assert b.tolist() == [10.0, 20.0] and b._version == version
    state = {"acc": plugrad.zeros(2)}
    with pytest.raises(plugrad.errors.InvalidArgumentError, match="argument 0 in place"):
        func.vmap(lambda s, r: s["acc"].copy_(r), in_dims=(None, 0))(state, x)
    assert state["acc"].tolist() == [0.0, 0.0]
    # A graph that saved b before the call can still be differentiated.
    w = plugrad.tensor([1.0, 2.0], requires_grad=True)
    y = (w * b).sum()
    with pytest.raises(plugrad.errors.InvalidArgumentError, match="differ between slices"):
        func.vmap(lambda r, b: b.mul_(r), in_dims=(0, None))(x, b)
    y.backward()
    assert w.grad.tolist() == [10.0, 20.0]
    # A function raising in a later slice leaves it as it was too.
    calls = []

    def fails_in_slice_1(r, b):
        b.add_(1.0)
        calls.append(r)
        if len(calls) == 2:
            raise KeyError("slice 1")
        return r

    with pytest.raises(KeyError):
        func.vmap(fails_in_slice_1, in_dims=(0, None))(x, b)
    assert b.tolist() == [10.0, 20.0]


def test_vmap_makes_a_change_alike_in_every_slice_once_as_torch() -> None:
    # It was refused (plugrad) where torch.func makes the change once.
    results = []
    for lib, transforms in libraries():
        x = lib.tensor(ROWS)
        b = lib.tensor([10.0, 20.0])
        version = b._version
        out = transforms.vmap(lambda r, b: b.add_(1.0) * r, in_dims=(0, None))(x, b)
        w = lib.tensor([1.0, 2.0], requires_grad=True)
        c = w * 1
        scaled = transforms.vmap(lambda r, c: c.mul_(3.0) * r, in_dims=(0, None))(x, c)
        scaled.sum().backward()
        results.append(
            (out.tolist(), b.tolist(), b._version - version, scaled.tolist(), w.grad.tolist())
        )
    assert results[0] == results[1]


@pytest.mark.parametrize(
    "case",
    [
        lambda lib, F: F.vmap(lib.linalg.inv)(lib.zeros(0, 3, 3)),
        lambda lib, F: F.vmap(lib.linalg.cholesky)(lib.zeros(0, 3, 3)),
        lambda lib, F: F.vmap(lib.linalg.solve)(lib.zeros(0, 3, 3), lib.zeros(0, 3)),
        lambda lib, F: F.vmap(lib.linalg.inv, in_dims=1)(lib.zeros(3, 0, 3)),
        lambda lib, F: F.vmap(lambda a: lib.linalg.eigh(a)[0])(lib.zeros(0, 3, 3)),
        lambda lib, F: F.vmap(lib.sin)(lib.zeros(0, 3, dtype=lib.float64)),
        lambda lib, F: F.vmap(lambda a, w: a @ w, in_dims=(0, None))(
            lib.zeros(0, 3, 2), lib.ones(2, 4)
        ),
    ],
)
def test_vmap_over_an_empty_batch_as_torch(case) -> None:
    # The function ran on a slice of zeros: inv and cholesky raised LinAlgError.
    shapes = [
        (tuple(r.shape), str(r.dtype).split(".")[-1]) for r in (case(*lib) for lib in libraries())
    ]
    assert shapes[0] == shapes[1]


def test_vmap_over_an_empty_batch_keeps_gradients_through_a_stand_in() -> None:
    x = plugrad.zeros(0, 3, 3, requires_grad=True)
    y = func.vmap(plugrad.linalg.inv)(x)
    assert y.shape == (0, 3, 3) and y.requires_grad
    assert plugrad.autograd.grad(y.sum(), x)[0].shape == (0, 3, 3)
    # A function that runs on no stand-in raises what it raised on the first one.
    with pytest.raises(plugrad.errors.LinAlgError):
        func.vmap(lambda a: plugrad.linalg.inv(a * 0))(plugrad.zeros(0, 3, 3))
    # A stand-in's change of an argument passed whole is undone.
    b = plugrad.ones(3)
    func.vmap(lambda a, b: b.add_(a[0]), in_dims=(0, None))(plugrad.zeros(0, 3, 3), b)
    assert b.tolist() == [1.0, 1.0, 1.0]


def test_named_tuples_are_pytrees_as_in_torch_func() -> None:
    # vmap and grad refused a named tuple argument ("argument 0 is a P"), vmap one inside an
    # output ("output 0['m'] is a max"); jacrev, vjp and jvp returned a plain tuple.
    results = []
    for lib, transforms in libraries():
        x = lib.tensor(ROWS, dtype=lib.float64)
        mapped = transforms.vmap(lambda q: q.w * q.b)(P(x, x + 1))
        maxima = transforms.vmap(lambda a: {"m": a.max(0)})(x)["m"]
        gradient = transforms.grad(lambda q: (q.w * q.b).sum())(P(x, x + 1))
        jacobian = transforms.jacrev(lambda a: P(a.sin(), a.sum()))(x[0])
        output, vjp_fn = transforms.vjp(lambda a: P(a.sin(), a.sum()), x[0])
        _, tangent = transforms.jvp(lambda a: P(a.sin(), a.sum()), (x[0],), (x[0],))
        results.append(
            (
                mapped.tolist(),
                maxima.values.tolist(),
                maxima.indices.tolist(),
                type(gradient).__name__,
                gradient.w.tolist(),
                type(jacobian).__name__,
                jacobian.w.tolist(),
                type(output).__name__,
                vjp_fn(P(lib.ones(2, dtype=lib.float64), lib.tensor(1.0, dtype=lib.float64)))[
                    0
                ].tolist(),
                type(tangent).__name__,
                tangent.b.tolist(),
            )
        )
    assert results[0] == results[1]


def test_jvp_takes_dicts_lists_and_tuples_of_tensors_as_torch_func() -> None:
    # "primal 0 is a dict; expected a Tensor" (linearize took them).
    results = []
    for lib, transforms in libraries():
        x = lib.tensor(ROWS, dtype=lib.float64)
        out, tangent = transforms.jvp(
            lambda d: {"s": d["a"].sin() * d["b"]}, ({"a": x, "b": x * 2},), ({"a": x, "b": x},)
        )
        pair = transforms.jvp(lambda ab, c: ab[0] * ab[1] + c, ([x, x.cos()], x), ([x, x], x))
        results.append((out["s"].tolist(), tangent["s"].tolist(), pair[1].tolist()))
    np.testing.assert_allclose(np.array(results[0][1]), np.array(results[1][1]))
    np.testing.assert_allclose(np.array(results[0][2]), np.array(results[1][2]))
    x = plugrad.ones(2)
    with pytest.raises(plugrad.errors.ArgumentError, match="tangent 0"):
        func.jvp(lambda d: d["a"].sin(), ({"a": x},), ({"b": x},))
    with pytest.raises(plugrad.errors.InvalidArgumentError, match="one tangent per primal"):
        func.jvp(lambda d: d["a"].sin(), ({"a": x},), ())


@pytest.mark.filterwarnings("ignore:Attempted to insert a get_attr Node:UserWarning")
def test_forward_mode_gives_integer_outputs_zero_tangents_as_torch_func() -> None:
    # A DtypeError ("only floating-point ... can require gradients", "no derivative").
    def run(lib, transforms):
        x = lib.tensor([[1.0, 2.0], [3.0, 5.0]])
        _, (_, index_tangent) = transforms.jvp(lambda a: (a.sin(), a.argmax()), (x,), (x,))
        _, mask_tangent = transforms.jvp(lambda a: a > 2, (x,), (x,))
        _, jvp_fn = transforms.linearize(lambda a: (a.sin(), a.argmax()), x)
        jacobians = [
            transforms.jacfwd(lambda a: a.argmax())(x[0]),
            transforms.jacfwd(lambda a: (a * 2).to(lib.int32))(x[0]),
            transforms.jacfwd(lambda a: (a.sin(), a.argmax(-1)))(x)[1],
        ]
        return [
            (tuple(t.shape), str(t.dtype).split(".")[-1], t.tolist())
            for t in (index_tangent, mask_tangent, jvp_fn(x)[1], *jacobians)
        ]

    assert run(torch, torch.func) == run(plugrad, plugrad.func)


def test_argnums_and_out_dims_are_checked_as_torch_func() -> None:
    # argnums=0.0 raised a bare TypeError ("'float' object is not iterable").
    x = plugrad.ones(2)
    for argnums in (0.0, (0.0,), "0"):
        with pytest.raises(plugrad.errors.ArgumentError, match="argnums must be an int"):
            func.grad(lambda a: a.sum(), argnums=argnums)(x)
    with pytest.raises(plugrad.errors.ArgumentError, match="argnums must be an int"):
        func.jacrev(lambda a: a, argnums=(None,))(x)

    # out_dims=True is 1, as torch.func's (it was refused).
    def run(lib, transforms):
        scale = lib.tensor([1.0, 10.0])
        return transforms.vmap(lambda r: r * scale, out_dims=True)(lib.tensor(ROWS)).tolist()

    assert run(torch, torch.func) == run(plugrad, plugrad.func)
