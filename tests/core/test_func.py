"""plugrad.func: vjp, jvp, jacobian (both modes), hessian, hvp — checked against PyTorch."""

from __future__ import annotations

import collections
import functools

import numpy as np
import pytest

import plugrad
from plugrad import func

torch = pytest.importorskip("torch")

# torch.func itself uses a deprecated torch.jit API internally.
pytestmark = pytest.mark.filterwarnings(
    "ignore:`torch.jit.script` is deprecated:DeprecationWarning"
)

X = [0.3, -1.2, 0.8]
W = [[0.5, -0.1, 0.2], [1.0, 0.3, -0.7]]


def f(lib, x, w):
    """R^3 x R^{2x3} -> R^2, smooth and mixing both arguments."""
    return lib.exp(w @ x) * lib.sum(x * x)


def scalar(lib, x):
    return lib.sum(lib.exp(x) * x * x) + lib.sum(x) ** 3


def t(values):
    return torch.tensor(values, dtype=torch.float64)


def p(values, **kwargs):
    return plugrad.tensor(values, dtype=plugrad.float64, **kwargs)


def test_vjp_matches_pytorch() -> None:
    out, vjp_fn = func.vjp(lambda x, w: f(plugrad, x, w), p(X), p(W))
    grads = vjp_fn(p([1.0, -2.0]))
    t_out, t_vjp = torch.func.vjp(lambda x, w: f(torch, x, w), t(X), t(W))
    expected = t_vjp(t([1.0, -2.0]))
    np.testing.assert_allclose(out.numpy(), t_out.numpy(), rtol=1e-12)
    for ours, theirs in zip(grads, expected):
        np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-12)
        assert not ours.requires_grad, "results for plain inputs come back detached"


def test_jvp_matches_pytorch() -> None:
    tangents = (p([1.0, 0.5, -1.0]), p([[0.1, 0.2, 0.3], [0.0, -1.0, 1.0]]))
    out, product = func.jvp(lambda x, w: f(plugrad, x, w), (p(X), p(W)), tangents)
    t_out, t_product = torch.func.jvp(
        lambda x, w: f(torch, x, w),
        (t(X), t(W)),
        tuple(torch.tensor(v.tolist(), dtype=torch.float64) for v in tangents),
    )
    np.testing.assert_allclose(out.numpy(), t_out.numpy(), rtol=1e-12)
    np.testing.assert_allclose(product.numpy(), t_product.numpy(), rtol=1e-12)


@pytest.mark.parametrize("mode", ["reverse", "forward"])
def test_jacobian_matches_pytorch_in_both_modes(mode) -> None:
    jac_x, jac_w = func.jacobian(lambda x, w: f(plugrad, x, w), argnums=(0, 1), mode=mode)(
        p(X), p(W)
    )
    t_x, t_w = torch.func.jacrev(lambda x, w: f(torch, x, w), argnums=(0, 1))(t(X), t(W))
    assert jac_x.shape == (2, 3) and jac_w.shape == (2, 2, 3)
    np.testing.assert_allclose(jac_x.numpy(), t_x.numpy(), rtol=1e-12)
    np.testing.assert_allclose(jac_w.numpy(), t_w.numpy(), rtol=1e-12)


def test_jacrev_and_jacfwd_agree() -> None:
    x = p(X)
    reverse = func.jacrev(lambda v: plugrad.exp(v) * v[0])(x)
    forward = func.jacfwd(lambda v: plugrad.exp(v) * v[0])(x)
    np.testing.assert_allclose(reverse.numpy(), forward.numpy(), rtol=1e-12)


def test_hessian_and_hvp_match_pytorch() -> None:
    hess = func.hessian(lambda x: scalar(plugrad, x))(p(X))
    t_hess = torch.func.hessian(lambda x: scalar(torch, x))(t(X))
    np.testing.assert_allclose(hess.numpy(), t_hess.numpy(), rtol=1e-12)
    v = [1.0, -0.5, 2.0]
    value, (product,) = func.hvp(lambda x: scalar(plugrad, x), (p(X),), (p(v),))
    _, t_product = torch.autograd.functional.hvp(lambda x: scalar(torch, x), t(X), t(v))
    np.testing.assert_allclose(product.numpy(), t_product.numpy(), rtol=1e-12)
    np.testing.assert_allclose(value.item(), scalar(np, np.array(X)), rtol=1e-12)


def test_transforms_stay_differentiable_for_inputs_that_require_grad() -> None:
    x = p(X, requires_grad=True)
    (g,) = func.vjp(lambda v: plugrad.sum(v**3), x)[1](p(1.0))
    assert g.requires_grad
    plugrad.sum(g).backward()
    np.testing.assert_allclose(x.grad.numpy(), 6 * np.array(X), rtol=1e-12)


def test_input_errors() -> None:
    with pytest.raises(plugrad.errors.DtypeError, match="floating-point"):
        func.vjp(lambda v: v * 2, plugrad.tensor([1, 2]))
    with pytest.raises(ValueError, match="one tangent per primal"):
        func.jvp(lambda v: v, (p(X),), ())
    with pytest.raises(ValueError, match="mode"):
        func.jacobian(lambda v: v, mode="sideways")
    with pytest.raises(ValueError, match="argnums"):
        func.jacobian(lambda v: v, argnums=3)(p(X))
    with pytest.raises(ValueError, match="one-element"):
        func.hvp(lambda v: v * 2, (p(X),), (p(X),))
    with pytest.raises(plugrad.errors.InvalidArgumentError, match="give indices from -1 to 0"):
        func.jacobian(lambda v: v, argnums=3)(p(X))
    _, vjp_fn = func.vjp(lambda v: v * 2, p(X))
    with pytest.raises(plugrad.errors.InvalidArgumentError, match="one cotangent per output"):
        vjp_fn(p(X), p(X))


def test_strict_refuses_zeros_that_come_from_independence_only() -> None:
    x, w = p(X), p(W)
    # Not strict: the unused argument's part is zeros, its mathematical value.
    assert func.vjp(lambda a, b: a * 2, x, w)[1](p(X))[1].tolist() == [[0.0] * 3] * 2
    _, vjp_fn = func.vjp(lambda a, b: a * 2, x, w, strict=True)
    with pytest.raises(plugrad.errors.IndependentInputError, match="depends on input 1"):
        vjp_fn(p(X))
    with pytest.raises(
        plugrad.errors.IndependentInputError,
        match="output 1 of the function does not depend on input 1",
    ):
        func.jacobian(lambda a, b: (a * b.sum(), a * 2), argnums=(0, 1), strict=True)(x, x)
    # argnums names the arguments in the message, in both modes.
    for mode in ("reverse", "forward"):
        with pytest.raises(plugrad.errors.IndependentInputError, match="on input 2"):
            func.jacobian(lambda a, b, c: a * b, argnums=(0, 2), mode=mode, strict=True)(x, x, x)
    both = func.jacobian(lambda a, b: a * b, argnums=(0, 1), mode="forward", strict=True)(x, x)
    np.testing.assert_allclose(both[0].numpy(), np.diag(X))
    with pytest.raises(plugrad.errors.IndependentInputError, match="input 0 depends on no input"):
        func.hessian(lambda a: plugrad.sum(a) * 2, strict=True)(x)
    assert func.hessian(lambda a: plugrad.sum(a) * 2)(x).tolist() == [[0.0] * 3] * 3


def test_grad_and_grad_and_value_match_pytorch() -> None:
    def loss(lib, x, w):
        return lib.sum(f(lib, x, w))

    ours = func.grad(lambda x, w: loss(plugrad, x, w), argnums=(0, 1))(p(X), p(W))
    theirs = torch.func.grad(lambda x, w: loss(torch, x, w), argnums=(0, 1))(t(X), t(W))
    for a, b in zip(ours, theirs, strict=True):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-12)
        assert not a.requires_grad
    second = func.grad(func.grad(lambda x: lib_cube(plugrad, x)))(p(0.7))
    their_second = torch.func.grad(torch.func.grad(lambda x: lib_cube(torch, x)))(t(0.7))
    np.testing.assert_allclose(second.numpy(), their_second.numpy(), rtol=1e-12)
    g, (value, aux) = func.grad_and_value(
        lambda x: (scalar(plugrad, x), plugrad.mean(x)), has_aux=True
    )(p(X))
    tg, (tvalue, taux) = torch.func.grad_and_value(
        lambda x: (scalar(torch, x), torch.mean(x)), has_aux=True
    )(t(X))
    for a, b in ((g, tg), (value, tvalue), (aux, taux)):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-12)
        assert not a.requires_grad


def lib_cube(lib, x):
    return x**3


def test_aux_tensors_in_lists_and_dicts_come_back_detached_as_in_pytorch() -> None:
    # Those in a list or dict came back with their graph (requires_grad=True).
    def loss(x):
        return (x * x).sum(), [x * 3, {"b": x}, (x + 1,)]

    _, aux = func.grad(loss, has_aux=True)(p(X))
    _, taux = torch.func.grad(loss, has_aux=True)(t(X))
    assert not aux[0].requires_grad and not aux[1]["b"].requires_grad
    assert not aux[2][0].requires_grad
    np.testing.assert_allclose(aux[0].numpy(), taux[0].numpy(), rtol=1e-12)
    # Non-tensors (which torch.func refuses) pass through as they are.
    _, mixed = func.grad(lambda x: ((x * x).sum(), {"n": 3, "s": "a"}), has_aux=True)(p(X))
    assert mixed == {"n": 3, "s": "a"}


def test_grad_refuses_a_function_whose_output_is_not_one_number() -> None:
    with pytest.raises(plugrad.errors.ShapeError, match=r"output is one number"):
        func.grad(lambda x: x * x)(p(X))
    with pytest.raises(plugrad.errors.InvalidArgumentError, match=r"pair \(output, aux\)"):
        func.grad(lambda x: plugrad.sum(x), has_aux=True)(p(X))


@pytest.mark.parametrize("name", ["xlogy", "xlog1py", "kl_div"])
def test_forward_mode_of_x_times_log_is_pytorchs(name) -> None:
    # Forward mode differentiates the backward rule at a zero cotangent: the rule for x must
    # have the derivative log(y) there (it gave 0, and so did kl_div in its target).
    y = np.array([3.0, 0.7, 0.0, -1.0, np.nan, 2.0])
    x = np.array([0.5, 2.0, 0.0, 0.0, 1.0, 0.0])
    functions = {
        "xlogy": (plugrad.xlogy, torch.xlogy),
        "xlog1py": (plugrad.special.xlog1py, torch.special.xlog1py),
        "kl_div": (
            lambda t, p: plugrad.nn.functional.kl_div(p, t, reduction="none"),
            lambda t, p: torch.nn.functional.kl_div(p, t, reduction="none"),
        ),
    }
    ours_function, theirs_function = functions[name]
    if name == "kl_div":
        x, y = np.abs(x) + 0.1, np.log(np.array([0.2, 0.3, 0.1, 0.1, 0.2, 0.1]))
    tangent = np.linspace(0.5, 1.5, 6)
    ours = func.jvp(lambda a: ours_function(a, plugrad.asarray(y)), (plugrad.asarray(x),),
                    (plugrad.asarray(tangent),))[1]  # fmt: skip
    theirs = torch.func.jvp(lambda a: theirs_function(a, torch.tensor(y)), (torch.tensor(x),),
                            (torch.tensor(tangent),))[1]  # fmt: skip
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-12)


def test_grad_of_a_dict_of_parameters_through_functional_call_matches_torch() -> None:
    # grad() took Tensors only: grad(loss)(dict(model.named_parameters())) raised.
    weights = np.array([[0.5, -1.0, 2.0]]), np.array([0.25])
    x, y = np.array([[1.0, 2.0, 3.0], [-1.0, 0.5, 0.0]]), np.array([[1.0], [2.0]])
    results = []
    for lib in (plugrad, torch):
        model = lib.nn.Linear(3, 1).double()
        params = {"weight": lib.tensor(weights[0]), "bias": lib.tensor(weights[1])}

        def loss(p, nested, lib=lib, model=model):
            out = lib.func.functional_call(model, p, (lib.tensor(x),))
            return ((out - lib.tensor(y)) ** 2).sum() * nested[0]["scale"]

        scale = [{"scale": lib.tensor(3.0, dtype=lib.float64)}]
        grads, value = lib.func.grad_and_value(loss, argnums=(0, 1))(params, scale)
        assert isinstance(grads[0], dict) and isinstance(grads[1], list)
        weight, bias = grads[0]["weight"].tolist(), grads[0]["bias"].tolist()
        results.append([weight, bias, grads[1][0]["scale"].item(), value.item()])
    for ours, theirs in zip(results[0], results[1]):
        np.testing.assert_allclose(ours, theirs, rtol=1e-12)
    with pytest.raises(TypeError, match=r"argument 0\['w'\] is a float"):
        plugrad.func.grad(lambda p: p["w"])({"w": 1.0})


def test_vmap_maps_over_slices_and_composes_with_grad_as_torch() -> None:
    # vmap did not exist: per-sample gradients (vmap(grad(loss), in_dims=(None, 0, 0))) failed.
    x_data = np.array([[1.0, 2.0], [3.0, 4.0], [5.0, -1.0]])
    results = []
    for lib, transforms in ((plugrad, plugrad.func), (torch, torch.func)):
        x, y = lib.tensor(x_data), lib.tensor([1.0, 0.0, 2.0], dtype=lib.float64)
        w = lib.tensor([0.5, -1.5], dtype=lib.float64)

        def loss(w, xi, yi):
            return (xi @ w - yi) ** 2

        per_sample = transforms.vmap(transforms.grad(loss), in_dims=(None, 0, 0))(w, x, y)
        pair = transforms.vmap(lambda r: (r, r.sum()), out_dims=(1, 0))(x)
        nested = transforms.vmap(lambda d: d["a"] * 2)({"a": x})
        leaf = x.clone().requires_grad_()
        transforms.vmap(lambda r: (r**3).sum())(leaf).sum().backward()
        results.append([per_sample.tolist(), pair[0].tolist(), pair[1].tolist(),
                        nested.tolist(), leaf.grad.tolist()])  # fmt: skip
    assert results[0] == results[1]
    assert plugrad.vmap is plugrad.func.vmap


def test_vmap_randomness_and_bad_dims() -> None:
    x = plugrad.ones(3, 2)
    with pytest.raises(plugrad.errors.InvalidArgumentError, match="randomness"):
        func.vmap(lambda r: r + plugrad.rand(2))(x)
    same = func.vmap(lambda r: r + plugrad.rand(2), randomness="same")(x)
    assert all(row == same[0].tolist() for row in same.tolist())
    different = func.vmap(lambda r: r + plugrad.rand(2), randomness="different")(x)
    assert different[0].tolist() != different[1].tolist()
    with pytest.raises(plugrad.errors.ShapeError, match="differ in size"):
        func.vmap(lambda a, b: a + b)(plugrad.ones(2), plugrad.ones(3))
    with pytest.raises(plugrad.errors.InvalidArgumentError, match="no argument is mapped"):
        func.vmap(lambda a: a, in_dims=None)(x)
    with pytest.raises(plugrad.errors.InvalidArgumentError, match="no dimension 2"):
        func.vmap(lambda a: a, in_dims=2)(x)


def test_vmap_takes_in_dims_shaped_as_its_arguments_as_torch() -> None:
    # A tuple or dict of entries for one argument was refused ("must be an int or None").
    def run(lib):
        pair = (lib.arange(6.0).reshape(2, 3), lib.arange(6.0).reshape(3, 2))
        named = {"a": pair[0], "b": pair[1]}
        return [
            lib.func.vmap(lambda p: p[0] * p[1], in_dims=((0, 1),))(pair),
            lib.func.vmap(lambda d: d["a"] + d["b"], in_dims=({"a": 0, "b": 1},))(named),
            lib.func.vmap(lambda p, w: p[0] * w + p[1], in_dims=((0, None), None))(
                (pair[0], lib.ones(3)), lib.arange(3.0)
            ),
        ]

    for ours, theirs in zip(run(plugrad), run(torch), strict=True):
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
    with pytest.raises(plugrad.errors.InvalidArgumentError, match="3 entries for an argument of 2"):
        func.vmap(lambda p: p[0], in_dims=((0, 1, 0),))((plugrad.ones(2), plugrad.ones(2)))
    with pytest.raises(plugrad.errors.InvalidArgumentError, match="shaped as its argument"):
        func.vmap(lambda p: p[0], in_dims=({"a": 0},))((plugrad.ones(2), plugrad.ones(2)))


def test_vjp_fn_takes_the_cotangents_of_a_tuple_as_one_tuple_as_pytorchs() -> None:
    # vjp_fn((c1, c2)), PyTorch's form for a function returning two outputs, was refused.
    x = plugrad.tensor([1.0, 2.0])
    _, vjp_fn = plugrad.func.vjp(lambda a: (a * 2, a * a), x)
    expected = vjp_fn(plugrad.ones(2), plugrad.tensor([1.0, 0.5]))
    for form in ((plugrad.ones(2), plugrad.tensor([1.0, 0.5])),
                 [plugrad.ones(2), plugrad.tensor([1.0, 0.5])]):  # fmt: skip
        assert vjp_fn(form)[0].tolist() == expected[0].tolist() == [4.0, 4.0]


def _nested_results(lib):
    a = lib.tensor([1.0, 2.0], dtype=lib.float64)
    v = lib.tensor([3.0, 4.0], dtype=lib.float64)
    w = lib.tensor([0.5, 1.5], dtype=lib.float64, requires_grad=True)
    f = lambda x, y: (x**2 * y**3).sum()
    return {
        "inner grad closing over the outer argument": lib.func.grad(
            lambda x: lib.func.grad(lambda y: (x * y**2).sum())(v).sum()
        )(a),
        "inner grad of the outer argument": lib.func.grad(
            lambda x: lib.func.grad(lambda y: (x * y**2).sum())(x).sum()
        )(a),
        "jacrev of jacrev": lib.func.jacrev(lib.func.jacrev(f, argnums=(0, 1)), argnums=1)(a, v)[0],
        "inner grad closing over a parameter": lib.func.grad(
            lambda x: lib.func.grad(lambda y: (w * x * y**2).sum())(v).sum()
        )(a),
        "outer argument inside the inner function": lib.func.grad(
            lambda y: lib.func.grad(lambda x: (x**2 * y).sum())(a).sum()
        )(v),
    }


def test_nested_transforms_keep_a_graph_only_to_what_requires_grad_outside_as_torch() -> None:
    # The inner grad's own tracking leaf made the outer result keep a graph: it required
    # grad and .numpy() raised, where torch.func's is a plain tensor.
    torch = pytest.importorskip("torch")
    ours, theirs = _nested_results(plugrad), _nested_results(torch)
    for name in ours:
        assert ours[name].requires_grad == theirs[name].requires_grad, name
        np.testing.assert_allclose(
            ours[name].detach().numpy(), theirs[name].detach().numpy(), rtol=1e-12, err_msg=name
        )


def _aux_results(lib):
    x = lib.tensor([1.0, 2.0], dtype=lib.float64)
    ones = lib.ones(2, dtype=lib.float64)

    def f(t):
        return t**3, (t.sum(), {"square": t * t})

    jac_rev, aux_rev = lib.func.jacrev(f, has_aux=True)(x)
    jac_fwd, aux_fwd = lib.func.jacfwd(f, has_aux=True)(x)
    out, vjp_fn, aux_vjp = lib.func.vjp(f, x, has_aux=True)
    primal, tangent, aux_jvp = lib.func.jvp(f, (x,), (ones,), has_aux=True)
    chunked = lib.func.jacrev(lambda t: t**2, chunk_size=1)(x)
    return [
        *(jac_rev, aux_rev[0], aux_rev[1]["square"], jac_fwd, aux_fwd[0], out, vjp_fn(ones)[0]),
        *(aux_vjp[0], primal, tangent, aux_jvp[1]["square"], chunked),
    ]


def test_jacrev_jacfwd_vjp_and_jvp_take_has_aux_as_torch() -> None:
    # has_aux= (and jacrev's chunk_size=) raised TypeError: only grad took it.
    torch = pytest.importorskip("torch")
    for ours, theirs in zip(_aux_results(plugrad), _aux_results(torch), strict=True):
        assert ours.requires_grad == theirs.requires_grad
        np.testing.assert_allclose(ours.detach().numpy(), theirs.detach().numpy(), rtol=1e-12)
    with pytest.raises(plugrad.errors.InvalidArgumentError, match="pair"):
        plugrad.func.jacrev(lambda t: t * 2, has_aux=True)(plugrad.ones(2))


@pytest.mark.parametrize(
    ("transform", "expected"),
    [
        (lambda f, x: plugrad.func.grad(lambda t: f(t).sum())(x), [3.0, 12.0]),
        (lambda f, x: plugrad.func.jacrev(f)(x).sum(0), [3.0, 12.0]),
        (lambda f, x: plugrad.func.jacfwd(f)(x).sum(0), [3.0, 12.0]),
        (lambda f, x: plugrad.func.vjp(f, x)[1](plugrad.ones(2))[0], [3.0, 12.0]),
        (lambda f, x: plugrad.func.jvp(f, (x,), (plugrad.ones(2),))[1], [3.0, 12.0]),
        (lambda f, x: plugrad.autograd.functional.vjp(f, x, plugrad.ones(2))[1], [3.0, 12.0]),
        (lambda f, x: plugrad.autograd.functional.hvp(lambda t: f(t).sum(), x, x * 0 + 1)[1],
         [6.0, 12.0]),
    ],
)  # fmt: skip
def test_transforms_under_no_grad_differentiate_a_primal_that_requires_grad(transform, expected):
    # The primal's tracked copy was made under no_grad, cut from the graph: every
    # gradient came out 0 (grad(loss)(dict(model.named_parameters())) in an eval loop).
    x = plugrad.tensor([1.0, 2.0], requires_grad=True)
    weight = plugrad.tensor([1.0, 1.0], requires_grad=True)
    with plugrad.no_grad():
        result = transform(lambda t: t**3 * weight, x)
    assert result.tolist() == expected
    assert not result.requires_grad  # no graph is recorded under no_grad, as torch.func's


def test_vmap_keeps_named_tuples_and_ordered_dicts() -> None:
    # A named tuple came back a plain tuple (x.max(0) mapped had no .values), an
    # OrderedDict a dict.
    ours = func.vmap(lambda row: row.max(0))(plugrad.arange(12.0).reshape(3, 4))
    theirs = torch.func.vmap(lambda row: row.max(0))(torch.arange(12.0).reshape(3, 4))
    assert ours.values.tolist() == theirs.values.tolist()
    assert ours.indices.tolist() == theirs.indices.tolist()
    mapped = func.vmap(lambda row: collections.OrderedDict(a=row * 2))(plugrad.ones(3, 2))
    assert type(mapped) is collections.OrderedDict and mapped["a"].shape == (3, 2)


@pytest.mark.parametrize(
    "case",
    [
        (lambda lib: lambda r: (r * r).sum(), 0, 0, [(0, 3)]),
        (lambda lib: lambda r: (r, r.sum()), 0, (1, 0), [(0, 3)]),
        (lambda lib: lambda r: {"a": r.long(), "b": [r * 2]}, 0, 0, [(0, 3)]),
        (lambda lib: lambda r, w: r @ w, (1, None), 0, [(3, 0), (3, 2)]),
        (lambda lib: lambda r: r.unsqueeze(0), 0, -1, [(0, 2, 3)]),
    ],
)
def test_vmap_over_an_empty_batch_returns_empty_results_as_torch(case) -> None:
    # A batch of 0 raised ShapeError; torch.func.vmap returns empty stacks.
    make, in_dims, out_dims, shapes = case
    results = []
    for lib in (plugrad, torch):
        args = [lib.ones(*shape) for shape in shapes]
        out = lib.func.vmap(make(lib), in_dims, out_dims)(*args)
        leaves = [out] if not isinstance(out, (tuple, dict)) else out
        if isinstance(out, dict):
            leaves = [out["a"], out["b"][0]]
        results.append([(tuple(t.shape), str(t.dtype).split(".")[-1]) for t in leaves])
    assert results[0] == results[1]


def test_vmap_over_an_empty_batch_checks_randomness_and_keeps_gradients() -> None:
    x = plugrad.ones(0, 2, requires_grad=True)
    (gradient,) = plugrad.autograd.grad(func.vmap(lambda r: r * 2)(x).sum(), x)
    assert gradient.shape == (0, 2)
    with pytest.raises(plugrad.errors.InvalidArgumentError, match="randomness"):
        func.vmap(lambda r: r + plugrad.rand(2))(plugrad.zeros(0, 2))
    state = plugrad.get_rng_state()
    out = func.vmap(lambda r: r + plugrad.rand(2), randomness="different")(plugrad.zeros(0, 2))
    assert out.shape == (0, 2)
    assert plugrad.get_rng_state().state == state.state  # (no numbers drawn for no slices)


def test_vmap_says_what_it_takes_and_returns() -> None:
    # A float or None returned was refused with "a transform differentiates ...".
    for value in (1.0, None):
        with pytest.raises(plugrad.errors.ArgumentError, match=r"vmap\(\) stacks Tensors") as e:
            func.vmap(lambda r, v=value: v)(plugrad.ones(2))
        assert "differentiates" not in str(e.value)
    assert func.vmap(lambda r: 1.0, out_dims=None)(plugrad.ones(2)) == 1.0  # as torch.func's
    with pytest.raises(plugrad.errors.ArgumentError, match="vmap\\(\\) maps over Tensors"):
        func.vmap(lambda r: r)(1.0)


def test_jacfwd_takes_has_aux_by_position_as_torch_func() -> None:
    jacobian, aux = func.jacfwd(lambda x: (x.sin(), x * 2), 0, True)(plugrad.ones(2))
    assert jacobian.shape == (2, 2) and aux.tolist() == [2.0, 2.0]


@pytest.mark.parametrize(
    "call",
    [
        lambda: func.jacrev(lambda x: plugrad.argmax(x))(p(X)),
        lambda: func.hessian(lambda x: plugrad.argmax(x))(p(X)),
        lambda: func.vjp(lambda x: (x > 0).long(), p(X)),
    ],
)
def test_an_integer_output_has_no_derivative(call) -> None:
    # Its Jacobian and gradients came out zeros (torch.func refuses floating-point-less outputs).
    with pytest.raises(plugrad.errors.DtypeError, match="no derivative"):
        call()


def test_grad_of_an_integer_output_is_zeros_as_torch_func() -> None:
    # grad raised DtypeError, where torch.func.grad (and grad_and_value) give zeros.
    results = []
    for lib in (plugrad, torch):
        x = lib.tensor([1.0, 2.0])
        g, value = lib.func.grad_and_value(lambda v: (v * 3).long().sum())(x)
        dicts = lib.func.grad(lambda d: (d["a"] > 0).sum())({"a": x, "b": x.double()})
        name = lambda dtype: str(dtype).split(".")[-1]
        parts = [(k, v.tolist(), name(v.dtype)) for k, v in dicts.items()]
        results.append((g.tolist(), name(g.dtype), value.item(), name(value.dtype), *parts))
    assert results[0] == results[1]


def test_aux_keeps_its_graph_to_what_the_function_closes_over() -> None:
    # As torch.func's: aux came back detached, and backward through it raised.
    w, tw = p(W[0], requires_grad=True), t(W[0]).requires_grad_()
    _, aux = func.grad(lambda x: ((x * x).sum(), w * 3), has_aux=True)(p(X))
    _, taux = torch.func.grad(lambda x: ((x * x).sum(), tw * 3), has_aux=True)(t(X))
    assert aux.requires_grad and taux.requires_grad
    aux.sum().backward()
    taux.sum().backward()
    np.testing.assert_allclose(w.grad.numpy(), tw.grad.numpy())
    _, _, in_vjp = func.vjp(lambda x: (x * 2, {"k": w * x}), p(X), has_aux=True)
    _, _, in_jvp = func.jvp(lambda x: (x * 2, w.sum()), (p(X),), (p(X),), has_aux=True)
    assert in_vjp["k"].requires_grad and in_jvp.requires_grad
    # Computed from the transform's own input only: nothing outside, no graph.
    _, own = func.grad(lambda x: ((x * x).sum(), x * 3), has_aux=True)(p(X))
    assert not own.requires_grad


def test_vmap_refuses_a_change_in_place_of_an_argument_passed_whole() -> None:
    # Every row of the result was the final w (each slice saw the ones before), silently;
    # torch.func refuses it.
    rows, w = plugrad.randn(4, 3), plugrad.zeros(3)
    with pytest.raises(plugrad.errors.InvalidArgumentError, match="argument 1 in place"):
        func.vmap(lambda r, w: w.add_(r), in_dims=(0, None))(rows, w)
    with pytest.raises(plugrad.errors.InvalidArgumentError, match="argument 0 in place"):
        func.vmap(lambda state, r: state["acc"].copy_(r), in_dims=(None, 0))({"acc": w}, rows)
    # A mapped argument's slices are views of it: changed in place, as torch.func's.
    mapped = rows.clone()
    func.vmap(lambda r: r.mul_(2))(mapped)
    np.testing.assert_array_equal(mapped.numpy(), rows.numpy() * 2)


BATCH_NORM_CALLS = {
    "the module": lambda model: model,
    "a closure": lambda model: lambda x: model(x),
    "a bound method": lambda model: model.forward,
    "a partial": lambda model: functools.partial(
        func.functional_call, model, dict(model.named_parameters())
    ),
}


@pytest.mark.parametrize("call", list(BATCH_NORM_CALLS))
def test_vmap_refuses_a_training_batch_norms_update_of_its_running_statistics(call) -> None:
    # Each slice updated running_mean in turn (one momentum step per slice), silently;
    # torch.func refuses a batched input to a BatchNorm that updates unbatched statistics.
    model = plugrad.nn.Sequential(plugrad.nn.Linear(2, 2), plugrad.nn.BatchNorm1d(2))
    before = {k: v.clone() for k, v in model.state_dict().items()}
    batches = plugrad.randn(4, 3, 2)
    with pytest.raises(plugrad.errors.InvalidArgumentError, match=r"buffer 1\.running_mean"):
        func.vmap(BATCH_NORM_CALLS[call](model))(batches)
    for name, value in model.state_dict().items():
        np.testing.assert_array_equal(value.numpy(), before[name].numpy(), err_msg=name)
    model.eval()  # (running statistics read, not written: mapped as a loop would)
    mapped = func.vmap(BATCH_NORM_CALLS[call](model))(batches)
    for i in range(4):
        expected = model(batches[i]).detach().numpy()
        np.testing.assert_allclose(mapped[i].detach().numpy(), expected, rtol=1e-6)


def test_vmap_refuses_random_draws_in_any_slice() -> None:
    # Only the first slice was checked: a draw in a later one passed.
    calls = []

    def draws_after_the_first(row):
        calls.append(1)
        return row + (plugrad.rand(3) if len(calls) > 1 else 0.0)

    with pytest.raises(plugrad.errors.InvalidArgumentError, match="randomness"):
        func.vmap(draws_after_the_first)(plugrad.ones(3, 3))


@pytest.mark.parametrize(
    "transform",
    [
        lambda f, x: plugrad.func.grad(lambda t: f(t).sum())(x),
        lambda f, x: plugrad.func.vjp(f, x),
        lambda f, x: plugrad.func.jvp(f, (x,), (plugrad.ones_like(x),)),
        lambda f, x: plugrad.func.jacrev(f)(x),
        lambda f, x: plugrad.func.hessian(lambda t: f(t).sum())(x),
    ],
    ids=["grad", "vjp", "jvp", "jacrev", "hessian"],
)
def test_a_primal_changed_in_place_is_refused_not_differentiated_changed(transform) -> None:
    # A primal that requires grad is tracked through a copy, which t.mul_(2) changed: the
    # gradient of sum((2t)**2) came out 4t, not 8t, without a word (torch.func refuses).
    x = plugrad.tensor([1.0, 2.0, 3.0], dtype=plugrad.float64, requires_grad=True)
    with pytest.raises(plugrad.errors.BackwardError, match="changed primal 0 in place"):
        transform(lambda t: t.mul_(2) ** 2, x)
    assert x.tolist() == [1.0, 2.0, 3.0]
    found = plugrad.func.grad(lambda t: (t.clone().mul_(2) ** 2).sum())(x)
    assert found.tolist() == [8.0, 16.0, 24.0]


def test_vmap_gives_an_output_whose_out_dims_is_none_once() -> None:
    # out_dims=(0, None) raised "'NoneType' object cannot be interpreted as an integer".
    w = plugrad.tensor([1.0, 2.0])
    mapped, total = plugrad.func.vmap(lambda x: (x * w, w.sum()), out_dims=(0, None))(
        plugrad.ones((3, 2))
    )
    assert mapped.shape == (3, 2) and total.shape == () and total.item() == 3.0
    with pytest.raises(plugrad.errors.InvalidArgumentError, match="differs between slices"):
        plugrad.func.vmap(lambda x: (x, x.sum()), out_dims=(0, None))(
            plugrad.arange(6.0).reshape(3, 2)
        )


def test_jacobians_with_no_elements_are_empty_blocks_as_torch_func() -> None:
    # stack() of no rows or columns raised a TypeError
    ones = plugrad.ones(4)
    assert plugrad.func.jacrev(lambda a: a[:0] * 2)(ones).shape == (0, 4)
    assert plugrad.func.jacfwd(lambda a: a[:0] * 2)(ones).shape == (0, 4)
    assert plugrad.func.jacfwd(lambda a: a * 2)(plugrad.ones(0)).shape == (0, 0)
    assert plugrad.func.hessian(lambda a: (a**2).sum())(plugrad.zeros(0)).shape == (0, 0)


def test_jacfwd_refuses_a_primal_that_holds_no_tensor_as_jacrev_does() -> None:
    # an AttributeError ("'tuple' object has no attribute 'size'") came from deep inside
    pair = (plugrad.tensor([1.0, 2.0]), 3.0)
    for transform in (plugrad.func.jacfwd, plugrad.func.jacrev):
        with pytest.raises(TypeError, match=r"argument 0\[1\] is a float"):
            transform(lambda p: p[0] * p[1])(pair)


def test_forward_mode_runs_the_function_once() -> None:
    # jacfwd ran the function once per input element (and once more): a BatchNorm's
    # running statistics were updated 3 times for a Jacobian of 2 columns.
    norm = plugrad.nn.BatchNorm1d(2)
    x = plugrad.randn(4, 2)
    calls = []

    def loss(weight):
        calls.append(1)
        return plugrad.func.functional_call(norm, {"weight": weight}, (x,)).sum()

    plugrad.func.jacfwd(loss)(plugrad.ones(2))
    assert len(calls) == 1 and norm.num_batches_tracked.item() == 1
    plugrad.func.jacobian(lambda t: t**3, mode="forward")(plugrad.ones(3))
    plugrad.manual_seed(0)
    # One draw for every column, as PyTorch's randomness="same".
    dropped = plugrad.func.jacfwd(
        lambda t: t * plugrad.nn.functional.dropout(plugrad.ones(50), 0.5).sum(),
        randomness="same",
    )(plugrad.ones(4))
    diagonal = dropped.diagonal().tolist()
    assert diagonal == [diagonal[0]] * 4


@pytest.mark.parametrize("name", ["jacrev", "jacfwd"])
def test_jacobians_of_list_and_dict_outputs_of_tensor_inputs_are_torch_funcs(name) -> None:
    # A list or dict output was refused (TypeError) unless an input was a structure.
    def f(t):
        return {"a": t * 2, "b": [t**2, t.sum()]}

    ours = getattr(plugrad.func, name)(f)(plugrad.tensor([1.0, 2.0]))
    theirs = getattr(torch.func, name)(f)(torch.tensor([1.0, 2.0]))
    assert set(ours) == {"a", "b"} and isinstance(ours["b"], list)
    for mine, reference in zip((ours["a"], *ours["b"]), (theirs["a"], *theirs["b"]), strict=True):
        np.testing.assert_array_equal(mine.numpy(), reference.numpy())


def test_vjp_and_jvp_of_list_and_dict_outputs_are_torch_funcs() -> None:
    def f(t):
        return {"a": t * 2, "b": [t**3]}

    results = []
    for lib in (plugrad, torch):
        x = lib.tensor([1.0, 2.0])
        output, vjp_fn = lib.func.vjp(f, x)
        (gradient,) = vjp_fn({"a": lib.ones(2), "b": [lib.tensor([1.0, -1.0])]})
        primal_out, tangent_out = lib.func.jvp(lambda t: [t * 2, (t**3,)], (x,), (lib.ones(2),))
        values = [output["a"], output["b"][0], gradient, primal_out[0], primal_out[1][0]]
        results.append([*values, tangent_out[0], tangent_out[1][0]])
    for mine, reference in zip(*results, strict=True):
        np.testing.assert_array_equal(mine.numpy(), reference.numpy())


def test_vmap_stacks_nested_outputs_along_nested_out_dims_as_torch() -> None:
    # A nested out_dims entry raised Python's TypeError.
    shapes = []
    for lib in (plugrad, torch):
        a, (b, c) = lib.func.vmap(lambda t: (t, (t * 2, t * 3)), out_dims=(0, (0, 1)))(
            lib.ones(3, 2)
        )
        shapes.append([tuple(a.shape), tuple(b.shape), tuple(c.shape)])
    assert shapes[0] == shapes[1] == [(3, 2), (3, 2), (2, 3)]
    refused = plugrad.errors.InvalidArgumentError
    with pytest.raises(refused, match=r"3 entries for output 1, which has 2"):
        plugrad.func.vmap(lambda t: (t, (t, t)), out_dims=(0, (0, 0, 0)))(plugrad.ones(3, 2))
    with pytest.raises(refused, match="must be an int, None, or a tuple"):
        plugrad.func.vmap(lambda t: (t, t), out_dims=(0, "x"))(plugrad.ones(3, 2))


def test_the_hessian_of_a_2_norm_at_a_zero_vector_is_torch_funcs_zeros() -> None:
    # It was the identity: the rule's x / safe_norm differentiated to I where the norm is 0.
    rows = [[0.0, 0.0], [3.0, 4.0]]
    ours = plugrad.func.hessian(lambda t: plugrad.linalg.vector_norm(t, axis=1).sum())(p(rows))
    theirs = torch.func.hessian(lambda t: torch.linalg.vector_norm(t, dim=1).sum())(t(rows))
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-12, atol=1e-15)


# torch.func.linearize traces with torch.fx, which warns about its own constants.
_torch_linearize_warns = pytest.mark.filterwarnings(
    "ignore:Attempted to insert a get_attr Node:UserWarning"
)


@_torch_linearize_warns
def test_linearize_matches_pytorch_and_runs_func_once() -> None:
    calls = []

    def ours(x, w):
        calls.append(1)
        return f(plugrad, x, w), plugrad.sum(x) * 2.0

    out, jvp_fn = func.linearize(ours, p(X), p(W))
    t_out, t_jvp_fn = torch.func.linearize(lambda x, w: (f(torch, x, w), x.sum() * 2.0), t(X), t(W))
    for a, b in zip(out, t_out, strict=True):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-12)
        assert not a.requires_grad
    rng = np.random.default_rng(0)
    for _ in range(3):
        tx, tw = rng.normal(size=3), rng.normal(size=(2, 3))
        products = jvp_fn(p(tx), p(tw))
        expected = t_jvp_fn(t(tx), t(tw))
        assert isinstance(products, tuple) and len(products) == 2
        for a, b in zip(products, expected, strict=True):
            np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-12)
            assert not a.requires_grad
        _, (j1, _) = func.jvp(lambda x, w: ours(x, w), (p(X), p(W)), (p(tx), p(tw)))
        np.testing.assert_allclose(products[0].numpy(), j1.numpy(), rtol=1e-12)
    assert len(calls) == 1 + 3  # linearize's one call, then only each jvp's own


@_torch_linearize_warns
def test_linearize_takes_structures_and_gives_zeros_for_constant_outputs_as_pytorch() -> None:
    x = [0.5, -1.0, 2.0]

    def body(lib, params):
        return {"y": lib.sin(params["a"]) * params["b"][0], "c": lib.ones(2, dtype=lib.float64)}

    out, jvp_fn = func.linearize(lambda d: body(plugrad, d), {"a": p(x), "b": [p(2.0)]})
    t_out, t_jvp_fn = torch.func.linearize(lambda d: body(torch, d), {"a": t(x), "b": [t(2.0)]})
    assert list(out) == list(t_out) == ["y", "c"]
    ours = jvp_fn({"a": p([1.0, 0.0, 2.0]), "b": [p(0.5)]})
    theirs = t_jvp_fn({"a": t([1.0, 0.0, 2.0]), "b": [t(0.5)]})
    for key in ("y", "c"):
        np.testing.assert_allclose(out[key].numpy(), t_out[key].detach().numpy(), rtol=1e-12)
        np.testing.assert_allclose(ours[key].numpy(), theirs[key].detach().numpy(), rtol=1e-12)
    np.testing.assert_array_equal(ours["c"].numpy(), np.zeros(2))


@_torch_linearize_warns
def test_linearize_results_are_differentiable_as_jvps_are() -> None:
    x = p([0.5, -1.0, 2.0])
    v = p([1.0, 2.0, -1.0], requires_grad=True)
    _, jvp_fn = func.linearize(lambda a: plugrad.sin(a) * 3.0, x)
    (gv,) = plugrad.autograd.grad(jvp_fn(v).sum(), v)
    t_v = t([1.0, 2.0, -1.0]).requires_grad_()
    _, t_jvp_fn = torch.func.linearize(lambda a: a.sin() * 3.0, t([0.5, -1.0, 2.0]))
    (t_gv,) = torch.autograd.grad(t_jvp_fn(t_v).sum(), t_v)
    np.testing.assert_allclose(gv.numpy(), t_gv.numpy(), rtol=1e-12)
    # A closed-over tensor that requires grad: the results keep their graph to it (the
    # gradient of a JVP: what func.jvp gives).
    w = p([1.0, 2.0, 3.0], requires_grad=True)
    out, jvp_fn = func.linearize(lambda a: plugrad.sin(a * w), x)
    assert out.requires_grad
    (gw,) = plugrad.autograd.grad(jvp_fn(p([1.0, 1.0, 1.0])).sum(), w)
    _, product = func.jvp(lambda a: plugrad.sin(a * w), (x,), (p([1.0, 1.0, 1.0]),))
    (expected,) = plugrad.autograd.grad(product.sum(), w)
    np.testing.assert_allclose(gw.numpy(), expected.numpy(), rtol=1e-12)
    # Inside another transform: d/dx of sum(cos x) through the linearization.
    inner = lambda a: func.linearize(plugrad.sin, a)[1](plugrad.ones_like(a)).sum()
    np.testing.assert_allclose(func.grad(inner)(x).numpy(), -np.sin([0.5, -1.0, 2.0]), rtol=1e-12)


@_torch_linearize_warns
def test_linearize_refuses_tangents_unlike_the_primals_as_pytorch() -> None:
    from plugrad.errors import ArgumentError, DtypeError, InvalidArgumentError, ShapeError

    _, jvp_fn = func.linearize(lambda a, d: a * d["b"], p([1.0, 2.0]), {"b": p(3.0)})
    _, t_jvp_fn = torch.func.linearize(lambda a, d: a * d["b"], t([1.0, 2.0]), {"b": t(3.0)})
    cases = [
        (
            (p([1.0, 1.0]),),
            InvalidArgumentError,
            "one tangent per primal given to linearize: 2, got 1",
        ),
        ((p([1.0]), {"b": p(1.0)}), ShapeError, r"shape \(1,\)"),
        ((p([1.0, 1.0]), {"b": p(1.0).to(plugrad.float32)}), DtypeError, "float32"),
        ((p([1.0, 1.0]), {"c": p(1.0)}), ArgumentError, "structure of primal 1"),
        (([1.0, 1.0], {"b": p(1.0)}), ArgumentError, "tangent 0 is a list"),
    ]
    for tangents, error, message in cases:
        with pytest.raises(error, match=message):
            jvp_fn(*tangents)
        theirs = [torch.tensor(v.numpy()) if isinstance(v, plugrad.Tensor) else v for v in tangents]
        if isinstance(theirs[-1], dict):
            theirs[-1] = {k: torch.tensor(v.numpy()) for k, v in tangents[-1].items()}
        with pytest.raises(RuntimeError):  # PyTorch refuses them all
            t_jvp_fn(*theirs)
    with pytest.raises(InvalidArgumentError, match="needs primals"):
        func.linearize(plugrad.sin)
    with pytest.raises(DtypeError, match="floating-point"):
        func.linearize(lambda a: a * 2, plugrad.tensor([1, 2]))


@pytest.mark.parametrize("transform", ["jacrev", "jacfwd"])
def test_jacobians_aux_keeps_its_graph_to_what_the_function_closes_over(transform) -> None:
    # aux came back detached unless an argument required grad: W's part of a loss built
    # from it was dropped (W.grad [1, 1, 1], not [3, 5, 7]).
    found = []
    for lib in (plugrad, torch):
        jacobian = getattr(lib.func, transform)
        W = lib.tensor([1.0, 2.0, 3.0], requires_grad=True)
        x = lib.tensor([0.5, -1.0, 2.0])
        J, aux = jacobian(lambda x, W=W: (x * W, (W**2).sum()), has_aux=True)(x)
        (J.sum() + aux).backward()
        _, of_x = jacobian(lambda x: (x * 2, (x**2).sum()), has_aux=True)(x)
        with lib.no_grad():
            _, unrecorded = jacobian(lambda x, W=W: (x * W, (W**2).sum()), has_aux=True)(x)
        params = {"w": lib.tensor([1.0, 2.0], requires_grad=True)}
        _, of_dict = jacobian(lambda p: (p["w"] * 3, (p["w"] ** 2).sum()), has_aux=True)(params)
        of_dict.backward()
        found.append(
            (
                W.grad.tolist(),
                of_x.requires_grad,
                unrecorded.requires_grad,
                params["w"].grad.tolist(),
            )
        )
    assert found[0] == found[1] == ([3.0, 5.0, 7.0], False, False, [2.0, 4.0])


def test_functional_call_with_none_empties_the_slot_for_the_call_as_torchs() -> None:
    x = np.array([[1.0, -2.0]])
    results = []
    for lib in (plugrad, torch):
        model = lib.nn.Linear(2, 3).double()
        with lib.no_grad():
            model.weight.copy_(lib.tensor([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]))
            model.bias.fill_(10.0)
        out = lib.func.functional_call(model, {"bias": None}, (lib.tensor(x),))
        assert model.bias is not None  # the module's own is back after the call
        results.append(out.tolist())
    assert results[0] == results[1] == [[-3.0, -5.0, -7.0]]
    layer = plugrad.nn.utils.parametrizations.weight_norm(plugrad.nn.Linear(2, 2))
    with pytest.raises(plugrad.errors.ArgumentError, match="parametrized tensor"):
        plugrad.func.functional_call(layer, {"weight": None}, (plugrad.ones(1, 2),))
