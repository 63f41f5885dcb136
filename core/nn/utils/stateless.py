"""Calling a module with other tensors in place of its parameters and buffers, and the
stacked tensors of several modules that do so for an ensemble (:func:`stack_module_state`)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

from ... import ops as _ops
from ...errors import ArgumentError, InvalidArgumentError, TensorNameError
from ...tensor import Tensor
from .. import module as _module
from ..module import Module
from . import parametrize

__all__ = ["functional_call", "stack_module_state"]


def functional_call(
    module: Module,
    parameter_and_buffer_dicts: Mapping[str, Tensor | None] | Sequence[Mapping[str, Tensor | None]],
    args: Any = None,
    kwargs: Mapping[str, Any] | None = None,
    *,
    tie_weights: bool = True,
    strict: bool = False,
) -> Any:
    """Call ``module(*args, **kwargs)`` with the given tensors in place of its parameters and
    buffers of those names (``"0.weight"``); the module is left as it was, even on error.

    As PyTorch's ``torch.func.functional_call``: the tensors may be any tensors
    (ones that require grad, results of other ops), so the call is a function
    of them; gradients flow to them, not to the module's own. ``args`` is a
    tuple of positional arguments, or one argument. Several dicts are merged
    (a name in two is an error). With ``tie_weights``, a tensor given for one
    name of a parameter the module shares under several names (tied
    embeddings) replaces it under all of them. ``None`` for a name empties
    that slot for the call (``{"bias": None}``: the layer without its bias).
    With ``strict``, every parameter and buffer must be given.

    A tensor given under the name of a parametrized tensor (``"weight"`` of a
    module with a parametrization of its weight) is used as it is, without the
    parametrization, as in PyTorch; give ``"parametrizations.weight.original"``
    to have the parametrization applied to it.

    Unlike PyTorch, a name that is neither a parameter nor a buffer of the
    module is refused rather than ignored: a misspelled name would leave the
    module's own tensor in use, a silently different result.

    Examples
    --------
    >>> import plugrad
    >>> from plugrad.func import functional_call
    >>> layer = plugrad.nn.Linear(2, 1, bias=False)
    >>> w = plugrad.tensor([[1.0, 2.0]], requires_grad=True)
    >>> out = functional_call(layer, {"weight": w}, (plugrad.tensor([[3.0, 4.0]]),))
    >>> out
    tensor([[11.]], grad_fn=<LinearBackward>)
    >>> out.sum().backward(); w.grad, layer.weight.grad
    (tensor([[3., 4.]]), None)
    """
    if not isinstance(module, Module):
        raise ArgumentError(f"functional_call() takes a Module, got {type(module).__name__}")
    given = _merged(parameter_and_buffer_dicts)
    parametrized = _parametrized_given(module, given)
    replacements = _replacements(module, given, tie_weights=tie_weights, strict=strict)
    if args is None:
        args = ()
    elif not isinstance(args, tuple):
        args = (args,)
    observer = _module._call_observer
    if observer is not None:
        # A capture (plugrad.compile) notes each module whose tensors are swapped as it is
        # before the swap: the members it finds at the end are the same, the plan is kept.
        swapped = {id(registry) for registry, _, _ in replacements}
        for owner in module.modules():
            if id(owner._parameters) in swapped or id(owner._buffers) in swapped:
                observer(owner)
    with _swapped(replacements), parametrize.given_instead(parametrized):
        return module(*args, **(kwargs or {}))


def _parametrized_given(
    module: Module, given: dict[str, Tensor | None]
) -> dict[tuple[Module, str], Tensor]:
    """The tensors of ``given`` named as a parametrized tensor (``"weight"`` of a module with
    a parametrization of its weight), taken out of ``given``: read as they are, without
    the parametrization, as PyTorch's (its originals are ``"parametrizations.weight.original"``)."""
    found: dict[tuple[Module, str], Tensor] = {}
    for prefix, sub in module.named_modules(remove_duplicate=False):
        if parametrize.is_parametrized(sub):
            for name in sub.parametrizations:
                full = f"{prefix}.{name}" if prefix else name
                if full in given:
                    value = given.pop(full)
                    if value is None:
                        raise ArgumentError(
                            f"functional_call(): None for {full!r}, a parametrized tensor; give "
                            "a tensor (a parametrization computes one, it has no empty slot)"
                        )
                    found[sub, name] = value
    return found


def _merged(dicts: Any) -> dict[str, Tensor | None]:
    """One dict of the given dicts (or dict), checking names and values."""
    if isinstance(dicts, Mapping):
        dicts = (dicts,)
    elif not isinstance(dicts, (tuple, list)):
        raise ArgumentError(
            "functional_call() takes a dict of tensors by name, or a tuple of such dicts; got "
            f"{type(dicts).__name__}"
        )
    merged: dict[str, Tensor | None] = {}
    for entries in dicts:
        if not isinstance(entries, Mapping):
            raise ArgumentError(
                f"functional_call(): each dict of tensors must be a mapping, got "
                f"{type(entries).__name__}"
            )
        for name, value in entries.items():
            if name in merged:
                raise InvalidArgumentError(
                    f"functional_call(): {name!r} is in more than one of the dicts; give each "
                    "name once"
                )
            if value is not None and not isinstance(value, Tensor):
                # (None: the slot empty for the call, as Linear(bias=False)'s bias, as PyTorch)
                raise ArgumentError(
                    f"functional_call(): the value for {name!r} is a {type(value).__name__}; "
                    "give a Tensor (or None)"
                )
            merged[name] = value
    return merged


def _replacements(
    module: Module, given: dict[str, Tensor | None], *, tie_weights: bool, strict: bool
) -> list[tuple[dict[str, Any], str, Tensor | None]]:
    """(registry, key, new tensor) for each parameter and buffer slot to swap."""
    slots: dict[str, tuple[dict[str, Any], str, Any]] = {}
    for prefix, sub in module.named_modules(remove_duplicate=False):
        for registry in (sub._parameters, sub._buffers):
            for key, value in registry.items():
                # A slot holding None (Linear(bias=False)'s bias) takes a tensor too, as PyTorch.
                slots[f"{prefix}.{key}" if prefix else key] = (registry, key, value)
    unexpected = sorted(name for name in given if name not in slots)
    if unexpected:
        raise TensorNameError(
            f"functional_call(): {type(module).__name__} has no parameter or buffer named "
            f"{', '.join(map(repr, unexpected))}; its names are {_listed(slots)}"
        )
    chosen = dict(given)
    if tie_weights:
        tied: dict[int, list[str]] = {}
        for name, (_, _, value) in slots.items():
            if value is not None:
                tied.setdefault(id(value), []).append(name)
        for names in tied.values():
            named = [n for n in names if n in given]
            if len({id(given[n]) for n in named}) > 1:
                raise InvalidArgumentError(
                    f"functional_call(): {', '.join(map(repr, named))} name one tied tensor "
                    "but were given different values; give one of them, or pass "
                    "tie_weights=False"
                )
            if named:
                chosen.update(dict.fromkeys(names, given[named[0]]))
    if strict:
        missing = sorted(n for n, slot in slots.items() if n not in chosen and slot[2] is not None)
        if missing:
            raise TensorNameError(
                f"functional_call(strict=True): no tensor given for "
                f"{', '.join(map(repr, missing))}; give a tensor for each of {_listed(slots)}, "
                "or pass strict=False to keep the module's own for those not given"
            )
    swaps: dict[tuple[int, str], tuple[dict[str, Any], str, Tensor | None]] = {}
    for name, value in chosen.items():
        registry, key, _ = slots[name]
        earlier = swaps.setdefault((id(registry), key), (registry, key, value))
        if earlier[2] is not value:  # one module under two names, given two values
            raise InvalidArgumentError(
                f"functional_call(): {name!r} names a tensor of a module shared under several "
                "names, which was given different values; give it once"
            )
    return list(swaps.values())


def _listed(slots: Mapping[str, Any], most: int = 20) -> str:
    """The module's parameter and buffer names for a message, the first ``most`` of many."""
    names = list(slots)
    if not names:
        return "none (the module has no parameters or buffers)"
    shown = ", ".join(map(repr, names[:most]))
    return shown if len(names) <= most else f"{shown} and {len(names) - most} more"


@contextmanager
def _swapped(replacements: list[tuple[dict[str, Any], str, Tensor | None]]) -> Iterator[None]:
    """Put each tensor in its slot for the block; the old ones back after it, whatever happens."""
    old = [(registry, key, registry[key]) for registry, key, _ in replacements]
    try:
        for registry, key, value in replacements:
            registry[key] = value
        yield
    finally:
        for registry, key, value in old:
            registry[key] = value


def _stacked_leaf(tensors: list[Tensor], name: str) -> Tensor:
    wanting = {t.requires_grad for t in tensors}
    if len(wanting) > 1:
        raise InvalidArgumentError(
            f"stack_module_state(): {name} requires grad in some models and not in others; "
            "the models must agree"
        )
    stacked = _ops.stack([t.detach() for t in tensors])
    if wanting == {True}:
        stacked.requires_grad_()
    return stacked


def stack_module_state(models: Sequence[Module]) -> tuple[dict[str, Tensor], dict[str, Tensor]]:
    """The parameters and buffers of several models of one class, stacked by name.

    As ``torch.func.stack_module_state``: each result maps a name (``"0.weight"``)
    to the models' tensors of that name stacked along a new first axis. Stacked
    parameters are new leaves that require grad (where the models' do),
    independent of the models' own, so an optimizer can train them; with
    :func:`functional_call` and :func:`plugrad.func.vmap` they run the whole
    ensemble at once.

    Examples
    --------
    >>> import plugrad
    >>> from plugrad.func import functional_call, stack_module_state, vmap
    >>> models = [plugrad.nn.Linear(3, 2) for _ in range(4)]
    >>> params, buffers = stack_module_state(models)
    >>> params["weight"].shape, params["weight"].is_leaf
    ((4, 2, 3), True)
    >>> def run(params, buffers, x):
    ...     return functional_call(models[0], (params, buffers), (x,))
    >>> vmap(run, in_dims=(0, 0, None))(params, buffers, plugrad.ones(5, 3)).shape
    (4, 5, 2)
    """
    models = list(models)
    if not models:
        raise InvalidArgumentError("stack_module_state() takes at least one model, got none")
    kind = type(models[0])
    for model in models:
        if not isinstance(model, Module):
            raise ArgumentError(f"stack_module_state() takes Modules, got {type(model).__name__}")
        if type(model) is not kind:
            raise InvalidArgumentError(
                "stack_module_state(): every model must be of one class, got "
                f"{kind.__name__} and {type(model).__name__}"
            )
    if len({model.training for model in models}) > 1:
        raise InvalidArgumentError(
            "stack_module_state(): every model must be in the same mode (training or eval)"
        )
    results = []
    for named in ("named_parameters", "named_buffers"):
        per_model = [dict(getattr(model, named)()) for model in models]
        names = list(per_model[0])
        for index, tensors in enumerate(per_model):
            if list(tensors) != names:
                raise InvalidArgumentError(
                    f"stack_module_state(): model {index} has the {named[6:]} {list(tensors)}, "
                    f"model 0 {names}"
                )
            for name in names:
                if tensors[name].shape != per_model[0][name].shape:
                    raise InvalidArgumentError(
                        f"stack_module_state(): {name} has shape {tuple(tensors[name].shape)} "
                        f"in model {index} and {tuple(per_model[0][name].shape)} in model 0"
                    )
        results.append(
            {name: _stacked_leaf([tensors[name] for tensors in per_model], name) for name in names}
        )
    return results[0], results[1]
