"""Differential tests: random programs run through plugrad and PyTorch must agree on
values, gradients and second-order gradients.

PyTorch is a test oracle only (CPU build, ``pip install torch``); without it these
tests are skipped.
"""

from __future__ import annotations

import types

import numpy as np
import pytest
from hypothesis import given, reject, settings
from hypothesis import strategies as st

import plugrad

torch = pytest.importorskip("torch")

SHAPES = [(3, 4), (4,), (3, 1), ()]

PLUGRAD = types.SimpleNamespace(
    exp=plugrad.exp,
    log=plugrad.log,
    maximum=lambda a, value: plugrad.maximum(a, value),
    sum=lambda a, axis, keepdims: plugrad.sum(a, axis=axis, keepdims=keepdims),
    mean=plugrad.mean,
    asarray=lambda array: plugrad.asarray(array, requires_grad=True),
    to_numpy=lambda t: t.detach().numpy(),
)
TORCH = types.SimpleNamespace(
    exp=torch.exp,
    log=torch.log,
    maximum=lambda a, value: torch.maximum(a, torch.tensor(value, dtype=a.dtype)),
    sum=lambda a, axis, keepdims: a.sum(dim=axis, keepdim=keepdims),
    mean=torch.mean,
    asarray=lambda array: torch.tensor(array, requires_grad=True),
    to_numpy=lambda t: t.detach().numpy(),
)

# Each op is written once over a library adapter ``L``; inputs stay in a bounded range.
UNARY = {
    "neg": lambda L, a: -a,
    "square": lambda L, a: a**2,
    "gauss": lambda L, a: L.exp(-(a * a)),
    "log1p_square": lambda L, a: L.log(a * a + 1.0),
    "shifted_relu": lambda L, a: L.maximum(a, 0.3),
    "row_sum": lambda L, a: L.sum(a, axis=-1, keepdims=True) if a.ndim else a,
    "mean": lambda L, a: L.mean(a),
    "scale": lambda L, a: 0.5 * a - 1.0,
}
BINARY = {
    "add": lambda L, a, b: a + b,
    "sub": lambda L, a, b: a - b,
    "mul": lambda L, a, b: a * b,
    "div": lambda L, a, b: a / (b * b + 1.0),
    "pow": lambda L, a, b: (a * a + 0.5) ** (0.5 * b),
}

step = st.one_of(
    st.tuples(st.sampled_from(sorted(UNARY)), st.integers(0, 99)),
    st.tuples(st.sampled_from(sorted(BINARY)), st.integers(0, 99), st.integers(0, 99)),
)
program_strategy = st.tuples(
    st.lists(st.sampled_from(SHAPES), min_size=1, max_size=3),
    st.lists(step, min_size=1, max_size=12),
    st.integers(0, 2**31 - 1),
)


def run(L, leaves, steps):
    """Run ``steps`` over ``leaves``; every intermediate value feeds the final scalar."""
    values = list(leaves)
    for name, *operands in steps:
        args = [values[i % len(values)] for i in operands]
        op = UNARY.get(name) or BINARY[name]
        values.append(op(L, *args))
    total = L.sum(values[0], axis=None, keepdims=False)
    for v in values[1:]:
        total = total + L.sum(v, axis=None, keepdims=False)
    return total


# PyTorch warns that .grad built with create_graph references its own graph; the test
# resets .grad right after, as that warning advises.
@pytest.mark.filterwarnings("ignore:Using backward\\(\\) with create_graph=True:UserWarning")
@settings(max_examples=120, deadline=None, derandomize=True)
@given(program_strategy)
def test_random_programs_agree_with_pytorch(program) -> None:
    shapes, steps, seed = program
    rng = np.random.default_rng(seed)
    arrays = [rng.uniform(-1.5, 1.5, size=s) for s in shapes]

    results = {}
    for name, L in (("plugrad", PLUGRAD), ("torch", TORCH)):
        leaves = [L.asarray(a) for a in arrays]
        out = run(L, leaves, steps)
        out.backward(create_graph=True)
        grads = [leaf.grad for leaf in leaves]
        first = [L.to_numpy(g) for g in grads]
        # Second order: d/dleaves of sum(grad * grad).
        for leaf in leaves:
            leaf.grad = None
        differentiable = [g for g in grads if g.requires_grad]
        if differentiable:
            second_out = L.sum(differentiable[0] * differentiable[0], axis=None, keepdims=False)
            for g in differentiable[1:]:
                second_out = second_out + L.sum(g * g, axis=None, keepdims=False)
            second_out.backward()
        second = [
            np.zeros(np.shape(a)) if leaf.grad is None else L.to_numpy(leaf.grad)
            for leaf, a in zip(leaves, arrays)
        ]
        results[name] = (L.to_numpy(out), first, second)

    value, first, second = results["plugrad"]
    t_value, t_first, t_second = results["torch"]
    np.testing.assert_allclose(value, t_value, rtol=1e-10, atol=1e-12)
    for ours, theirs in zip(first, t_first):
        np.testing.assert_allclose(ours, theirs, rtol=1e-9, atol=1e-12)
    for ours, theirs in zip(second, t_second):
        np.testing.assert_allclose(ours, theirs, rtol=1e-8, atol=1e-10)


def test_matmul_shapes_agree_with_pytorch() -> None:
    rng = np.random.default_rng(0)
    shapes = [((4,), (4,)), ((3, 4), (4,)), ((4,), (4, 2)), ((2, 1, 3, 4), (5, 4, 2))]
    for shape_a, shape_b in shapes:
        a, b = rng.normal(size=shape_a), rng.normal(size=shape_b)
        pa, pb = plugrad.asarray(a, requires_grad=True), plugrad.asarray(b, requires_grad=True)
        ta, tb = torch.tensor(a, requires_grad=True), torch.tensor(b, requires_grad=True)
        plugrad.sum(plugrad.exp(pa @ pb)).backward()
        torch.exp(ta @ tb).sum().backward()
        np.testing.assert_allclose(pa.grad.numpy(), ta.grad.numpy(), rtol=1e-10)
        np.testing.assert_allclose(pb.grad.numpy(), tb.grad.numpy(), rtol=1e-10)


# -- in-place changes under no_grad: to saved inputs, saved outputs and views ------------
#
# A program builds values from two leaves with ops that keep the same values for backward
# in both libraries, then changes one value in place under no_grad, directly or through a
# view, and backpropagates. Both libraries must refuse (a saved value changed), or both
# give the same gradients: never a gradient computed from changed data.

SAVING_UNARY = {
    "exp": lambda L, a: L.exp(a),  # keeps its output
    "tanh": lambda L, a: L.tanh(a),  # keeps its output
    "sin": lambda L, a: L.sin(a),  # keeps its input
    "square": lambda L, a: a * a if L is TORCH_INPLACE else L.square(a),  # keeps its input
    "scale": lambda L, a: 2.0 * a + 1.0,  # keeps nothing
    "same_view": lambda L, a: a[:],  # a view, keeps nothing
    "transposed_twice": lambda L, a: a.T.T,  # a view of a view
}
SAVING_BINARY = {
    "add": lambda L, a, b: a + b,  # keeps nothing
    "mul": lambda L, a, b: a * b,  # keeps both inputs
}
# Views through which a value is changed: each a view in both libraries.
MUTATION_VIEWS = {
    "whole": lambda L, t: t,
    "rows": lambda L, t: t[1:],
    "column": lambda L, t: t[:, 2],
    "element_row": lambda L, t: t[0],
    "transpose": lambda L, t: t.T,
    "flat_strided": lambda L, t: L.reshape(t, (12,))[::5],
    "unstacked": lambda L, t: L.unstack(t)[1],
    "real": lambda L, t: L.real(t),
}
MUTATIONS = {
    "add": lambda v: v.__iadd__(0.25),
    "mul": lambda v: v.__imul__(1.5),
}

PLUGRAD_INPLACE = types.SimpleNamespace(
    exp=plugrad.exp,
    tanh=plugrad.tanh,
    sin=plugrad.sin,
    square=plugrad.square,
    sum=lambda a: plugrad.sum(a),
    reshape=plugrad.reshape,
    unstack=plugrad.unstack,
    real=plugrad.real,
    no_grad=plugrad.no_grad,
    leaf=lambda array: plugrad.asarray(array, requires_grad=True),
    errors=(plugrad.errors.PlugradError,),
)
TORCH_INPLACE = types.SimpleNamespace(
    exp=torch.exp,
    tanh=torch.tanh,
    sin=torch.sin,
    sum=lambda a: a.sum(),
    reshape=torch.reshape,
    unstack=torch.unbind,
    real=torch.real,
    no_grad=torch.no_grad,
    leaf=lambda array: torch.tensor(array, requires_grad=True),
    errors=(RuntimeError,),
)

inplace_step = st.one_of(
    st.tuples(st.sampled_from(sorted(SAVING_UNARY)), st.integers(0, 99)),
    st.tuples(st.sampled_from(sorted(SAVING_BINARY)), st.integers(0, 99), st.integers(0, 99)),
)
inplace_program = st.fixed_dictionaries(
    {
        "steps": st.lists(inplace_step, min_size=1, max_size=8),
        "target": st.integers(0, 99),  # which value is changed
        "after": st.integers(0, 99),  # after how many steps
        "view": st.sampled_from(sorted(MUTATION_VIEWS)),
        "mutation": st.sampled_from(sorted(MUTATIONS)),
        "seed": st.integers(0, 2**31 - 1),
    }
)


def change_in_place(L, values, target, program) -> None:
    """Apply the program's in-place change to ``target`` through its view.

    Where views are copies (JAX, Dask), plugrad refuses a change it cannot show in every
    view (ViewCopyError, documented on the backends page); PyTorch has no such refusal,
    so that program is not compared, once the refusal is checked to have changed nothing.
    """
    change = MUTATIONS[program["mutation"]]
    if L is not PLUGRAD_INPLACE or not plugrad.default_device().views_are_copies:
        change(MUTATION_VIEWS[program["view"]](L, target))
        return
    before = [value.detach().numpy().copy() for value in values]
    try:
        change(MUTATION_VIEWS[program["view"]](L, target))
    except plugrad.errors.ViewCopyError:
        for value, kept in zip(values, before):
            np.testing.assert_array_equal(value.detach().numpy(), kept)
        reject()


def run_with_mutation(L, arrays, program):
    """Run the program, change one value in place under no_grad on the way, backpropagate.

    Returns ("raised", None, None) if backward refused, else ("ok", loss, gradients).
    """
    leaves = [L.leaf(a.copy()) for a in arrays]  # changed in place: never the caller's data
    values = list(leaves)
    steps = program["steps"]
    after = program["after"] % (len(steps) + 1)
    for index in range(len(steps) + 1):
        if index == after:
            target = values[program["target"] % len(values)]
            with L.no_grad():
                change_in_place(L, values, target, program)
        if index == len(steps):
            break
        name, *operands = steps[index]
        op = SAVING_UNARY.get(name) or SAVING_BINARY[name]
        values.append(op(L, *(values[i % len(values)] for i in operands)))
    loss = L.sum(values[0])
    for value in values[1:]:
        loss = loss + L.sum(value)
    try:
        loss.backward()
    except L.errors:
        return "raised", leaves, None
    return "ok", loss.detach().numpy(), [leaf.grad.detach().numpy() for leaf in leaves]


@given(inplace_program)
def test_in_place_changes_under_no_grad_agree_with_pytorch(program) -> None:
    rng = np.random.default_rng(program["seed"])
    arrays = [rng.uniform(-1.0, 1.0, size=(3, 4)) for _ in range(2)]
    ours = run_with_mutation(PLUGRAD_INPLACE, arrays, program)
    theirs = run_with_mutation(TORCH_INPLACE, arrays, program)
    assert ours[0] == theirs[0], f"plugrad {ours[0]}, PyTorch {theirs[0]}"
    if ours[0] == "raised":
        assert all(leaf.grad is None for leaf in ours[1]), "a refused backward changed .grad"
        return
    np.testing.assert_allclose(ours[1], theirs[1], rtol=1e-12)
    for mine, reference in zip(ours[2], theirs[2]):
        np.testing.assert_allclose(mine, reference, rtol=1e-10, atol=1e-12)


# -- several threads backpropagating into shared leaves ------------------------------------
#
# Each thread runs its own random program over the same leaves (optionally through one
# shared part of the graph, kept with retain_graph) and backpropagates at the same time as
# the others. The leaves' gradients must be the sum of the programs' gradients.

threaded_program = st.fixed_dictionaries(
    {
        "programs": st.lists(st.lists(step, min_size=1, max_size=8), min_size=2, max_size=4),
        "shared_prefix": st.booleans(),
        "repeats": st.integers(1, 3),
        "seed": st.integers(0, 2**31 - 1),
    }
)


def threaded_gradients(L, arrays, program, concurrent: bool):
    import threading

    leaves = [L.asarray(a.copy()) for a in arrays]
    shared = [L.exp(-(leaf * leaf)) for leaf in leaves] if program["shared_prefix"] else None
    barrier = threading.Barrier(len(program["programs"]))
    errors = []

    def work(steps):
        try:
            if concurrent:
                barrier.wait(timeout=60)
            for _ in range(program["repeats"]):
                inputs = leaves if shared is None else [*leaves, *shared]
                run(L, inputs, steps).backward(retain_graph=shared is not None)
        except BaseException as exc:  # reported by the main thread
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(s,)) for s in program["programs"]]
    if concurrent:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=120)
    else:
        for thread in threads:
            thread.start()
            thread.join(timeout=120)
    assert not errors, errors
    return [L.to_numpy(leaf.grad) for leaf in leaves]


@given(threaded_program)
def test_concurrent_backward_into_shared_leaves_agrees_with_pytorch(program) -> None:
    rng = np.random.default_rng(program["seed"])
    arrays = [rng.uniform(-1.5, 1.5, size=s) for s in [(3, 4), (4,)]]
    ours = threaded_gradients(PLUGRAD, arrays, program, concurrent=True)
    theirs = threaded_gradients(TORCH, arrays, program, concurrent=False)
    for mine, reference in zip(ours, theirs):
        np.testing.assert_allclose(mine, reference, rtol=1e-9, atol=1e-12)


# -- nn losses with class targets, at and beyond the edges ---------------------------------
#
# Targets are mostly in range; the others are the ignored index, -1, -2, the number of
# classes or one more (out of range unless that is the ignored index).
# Both libraries must refuse, or agree on the loss and the gradient of the input, for every
# reduction, with and without class weights.

loss_case = st.fixed_dictionaries(
    {
        "loss": st.sampled_from(["cross_entropy", "nll_loss"]),
        "batch": st.integers(1, 5),
        "classes": st.integers(1, 5),
        "targets": st.lists(st.integers(0, 99), min_size=5, max_size=5),
        "ignore_index": st.sampled_from([-100, -1, 0, 2, 5]),
        "reduction": st.sampled_from(["mean", "sum", "none"]),
        "weighted": st.booleans(),
        "seed": st.integers(0, 2**31 - 1),
    }
)


def class_loss(library, case, logits, weight):
    """(loss, d loss / d logits), or "raised". (PyTorch has no gradient for the weight.)"""
    functional = plugrad.nn.functional if library is plugrad else torch.nn.functional
    x = library.tensor(logits, requires_grad=True)
    w = None if weight is None else library.tensor(weight)
    classes, ignored = case["classes"], case["ignore_index"]
    edges = [-2, -1, classes, classes + 1, ignored]
    targets = [t % classes if t < 80 else edges[t % 5] for t in case["targets"][: case["batch"]]]
    target = library.tensor(np.array(targets, dtype=np.int64))
    options = {"ignore_index": case["ignore_index"], "reduction": case["reduction"]}
    errors = (plugrad.errors.PlugradError,) if library is plugrad else (IndexError, RuntimeError)
    try:
        if case["loss"] == "cross_entropy":
            out = functional.cross_entropy(x, target, weight=w, **options)
        else:
            out = functional.nll_loss(functional.log_softmax(x, dim=1), target, weight=w, **options)
        out.sum().backward()
    except errors:
        return "raised"
    return [out.detach().numpy(), x.grad.detach().numpy()]


@given(loss_case)
def test_class_losses_at_edge_targets_agree_with_pytorch(case) -> None:
    rng = np.random.default_rng(case["seed"])
    logits = rng.normal(size=(case["batch"], case["classes"]))
    weight = rng.uniform(0.5, 2.0, size=case["classes"]) if case["weighted"] else None
    ours = class_loss(plugrad, case, logits, weight)
    theirs = class_loss(torch, case, logits, weight)
    if isinstance(ours, str) or isinstance(theirs, str):
        assert ours == theirs, f"plugrad: {ours}, PyTorch: {theirs}"
        return
    for mine, reference in zip(ours, theirs):
        np.testing.assert_allclose(mine, reference, rtol=1e-10, atol=1e-12)
