"""A bad argument gets one of plugrad's errors, which is also the built-in one.

``except plugrad.errors.PlugradError`` catches every refusal of plugrad's own, and
code written for NumPy or PyTorch (``except ValueError``, ``except TypeError``)
keeps working. The source is checked too: no ``raise ValueError(...)``,
``raise TypeError(...)`` or ``raise IndexError(...)`` of the bare built-ins is
left in the package.
"""

from __future__ import annotations

import ast
import copy
import math
import pathlib

import pytest

import plugrad
import plugrad.plugins
from plugrad import errors


def _with_grad(values: list[float]) -> plugrad.Tensor:
    tensor = plugrad.zeros(len(values), requires_grad=True)
    tensor.grad = plugrad.tensor(values)
    return tensor


def _parameter() -> plugrad.Tensor:
    return plugrad.zeros(2, requires_grad=True)


def _stepped_twice() -> None:
    parameter = _with_grad([1.0, 2.0])
    optimizer = plugrad.optim.SGD([parameter], lr=0.1)
    scaler = plugrad.amp.GradScaler()
    scaler.step(optimizer)
    scaler.step(optimizer)


CASES = {
    "a negative size": (lambda: plugrad.zeros(-1), ValueError),
    "a negative size given as an int tensor": (
        lambda: plugrad.ones(plugrad.tensor(-2)),
        ValueError,
    ),
    "arange without an end": (lambda: plugrad.arange(), TypeError),
    "a list as an op's input": (lambda: plugrad.multiply(plugrad.ones(2), [0.5]), TypeError),
    "a string as an op's input": (lambda: plugrad.add(plugrad.ones(2), "a"), TypeError),
    "a DataLoader of batch_size 0": (
        lambda: plugrad.utils.data.DataLoader([1, 2], batch_size=0),
        ValueError,
    ),
    "a negative learning rate": (lambda: plugrad.optim.SGD([_parameter()], lr=-1.0), ValueError),
    "random_split into a negative length": (
        lambda: plugrad.utils.data.random_split(range(4), [-1, 5]),
        ValueError,
    ),
    "multinomial of no samples": (lambda: plugrad.multinomial(plugrad.ones(3), 0), ValueError),
    "gradcheck of nothing that requires grad": (
        lambda: plugrad.autograd.gradcheck(lambda x: x, (plugrad.ones(2),)),
        ValueError,
    ),
    "a normal distribution of negative scale": (
        lambda: plugrad.distributions.Normal(0.0, -1.0, validate_args=True),
        ValueError,
    ),
    "dropout of probability 2": (lambda: plugrad.nn.Dropout(p=2.0), ValueError),
    "two ellipses in an index": (lambda: plugrad.ones(3)[..., ...], IndexError),
    "more indices than dimensions": (lambda: plugrad.ones(3)[0, 0], IndexError),
    "a float index array": (lambda: plugrad.ones(3)[plugrad.tensor([0.0])], TypeError),
    "a float index array (as NumPy and PyTorch: an IndexError)": (
        lambda: plugrad.ones(3)[plugrad.tensor([0.0])],
        IndexError,
    ),
    "a float index array in an assignment": (
        lambda: plugrad.ones(3).__setitem__((plugrad.tensor([0.0]),), 1.0),
        IndexError,
    ),
    "a Sequential's module past the end": (lambda: plugrad.nn.Sequential()[0], IndexError),
    "size() of a dimension past the last": (lambda: plugrad.ones(3).size(1), IndexError),
    "clipping gradients whose norm is not finite": (
        lambda: plugrad.nn.utils.clip_grad_norm_(
            [_with_grad([math.inf])], 1.0, error_if_nonfinite=True
        ),
        RuntimeError,
    ),
    "spectral_norm twice": (
        lambda: plugrad.nn.utils.spectral_norm(
            plugrad.nn.utils.spectral_norm(plugrad.nn.Linear(2, 2))
        ),
        RuntimeError,
    ),
    "a deep copy of a tensor with a graph": (
        lambda: copy.deepcopy(_parameter() * 2),
        RuntimeError,
    ),
    "GradScaler.step() twice before update()": (_stepped_twice, RuntimeError),
    "GradScaler.update() before any step()": (
        lambda: plugrad.amp.GradScaler().update(),
        RuntimeError,
    ),
    "max_pool2d of kernel size 0": (
        lambda: plugrad.nn.functional.max_pool2d(plugrad.ones(1, 1, 4, 4), 0),
        ValueError,
    ),
    "avg_pool3d of stride 0": (
        lambda: plugrad.nn.functional.avg_pool3d(plugrad.ones(1, 1, 4, 4, 4), 2, 0),
        ValueError,
    ),
    "an integer division by zero": (
        lambda: plugrad.tensor([7, -7]) // plugrad.tensor([2, 0]),
        ZeroDivisionError,
    ),
    "an integer remainder by zero, in place": (
        lambda: plugrad.tensor([7, -7]).remainder_(0),
        RuntimeError,
    ),
    "a linear layer of -1 inputs": (lambda: plugrad.nn.Linear(-1, 2), ValueError),
    "an unknown reduction": (
        lambda: plugrad.nn.functional.mse_loss(plugrad.ones(2), plugrad.ones(2), reduction="all"),
        ValueError,
    ),
    "a module's parameter that is not a tensor": (
        lambda: plugrad.nn.Module().register_parameter("w", 1.0),
        TypeError,
    ),
    # A named dimension (PyTorch's named tensors), which plugrad has not: the kernels'
    # own TypeErrors came out.
    **{
        f"a named dim: {name}": (lambda call=call: call(plugrad.ones(2, 3)), TypeError)
        for name, call in {
            "x.sum('rows')": lambda x: x.sum("rows"),
            "mean(dim=)": lambda x: plugrad.mean(x, dim="rows"),
            "x.cumsum": lambda x: x.cumsum("rows"),
            "x.softmax": lambda x: x.softmax("rows"),
            "x.flip": lambda x: x.flip(("rows",)),
            "x.movedim": lambda x: x.movedim("rows", 0),
            "x.squeeze": lambda x: x.squeeze("rows"),
            "x.transpose": lambda x: x.transpose(0, "rows"),
            "x.narrow": lambda x: x.narrow("rows", 0, 1),
            "x.select": lambda x: x.select("rows", 0),
            "x.index_select": lambda x: x.index_select("rows", plugrad.tensor([0])),
        }.items()
    },
    # A number where PyTorch's form of a function takes its input tensor (AttributeErrors
    # of the adapters), and other calls PyTorch refuses that raised built-ins.
    "clamp_min(2, x)": (lambda: plugrad.clamp_min(2, plugrad.ones(2)), TypeError),
    "heaviside(2, x)": (lambda: plugrad.heaviside(2, plugrad.ones(2)), TypeError),
    "max(2, 3)": (lambda: plugrad.max(2, 3), TypeError),
    "movedim of two axes to one": (
        lambda: plugrad.movedim(plugrad.ones(2, 3, 4), (0, 1), (2,)),
        ValueError,
    ),
    "linspace of a float count": (lambda: plugrad.linspace(0, 3, 1.0), TypeError),
    "normal pinned": (lambda: plugrad.normal(0.0, 1.0, (2,), pin_memory=True), TypeError),
}


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_a_bad_argument_gets_a_plugrad_error_that_is_also_the_built_in(case):
    call, built_in = case
    with pytest.raises(built_in) as caught:
        call()
    assert isinstance(caught.value, errors.PlugradError), type(caught.value).__mro__


def _bare_raises(folder: pathlib.Path) -> list[str]:
    found = []
    for path in sorted(folder.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.Raise) or node.exc is None:
                continue
            exc = node.exc.func if isinstance(node.exc, ast.Call) else node.exc
            bare = ("ValueError", "TypeError", "IndexError", "RuntimeError", "ZeroDivisionError")
            if isinstance(exc, ast.Name) and exc.id in bare:
                found.append(f"{path.relative_to(folder.parent)}:{node.lineno}: raise {exc.id}")
    return found


@pytest.mark.parametrize("package", [plugrad, plugrad.plugins], ids=["core", "plugins"])
def test_no_bare_value_type_index_or_runtime_error_is_raised_in_the_source(package):
    # The backends are left out: their kernels raise what the array library would, and
    # dispatch tells it again as a ShapeError naming the op.
    folder = pathlib.Path(package.__file__).parent
    if package is plugrad:
        found = [
            f
            for f in _bare_raises(folder)
            if not f.split("/", 2)[1].startswith(("backends", "plugins"))
        ]
    else:
        found = _bare_raises(folder)
    assert not found, (
        "raise ArgumentError, InvalidArgumentError or InvalidIndexError (or a finer class):\n"
        + ("\n".join(found))
    )
