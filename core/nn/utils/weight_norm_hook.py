"""PyTorch's older weight normalization by a forward pre-hook (``torch.nn.utils.weight_norm``),
deprecated there for :func:`plugrad.nn.utils.parametrizations.weight_norm`."""

from __future__ import annotations

import warnings
from typing import Any

from ...grad_mode import no_grad
from ...tensor import Tensor
from ..module import Module
from ..parameter import Parameter
from .parametrizations import norm_except_dim

__all__ = ["remove_weight_norm", "weight_norm"]


class WeightNorm:
    """The forward pre-hook that sets ``module.<name>`` to ``g * v / ||v||`` before each call."""

    def __init__(self, name: str, dim: int) -> None:
        self.name, self.dim = name, dim

    def compute_weight(self, module: Module) -> Tensor:
        g = getattr(module, self.name + "_g")
        v = getattr(module, self.name + "_v")
        return v * (g / norm_except_dim(v, self.dim))

    def __call__(self, module: Module, inputs: Any) -> None:
        object.__setattr__(module, self.name, self.compute_weight(module))


def weight_norm(module: Module, name: str = "weight", dim: int | None = 0) -> Module:
    """Replace the parameter ``name`` by ``name_g`` (magnitude) and ``name_v`` (direction),
    recombined before each call, as PyTorch's deprecated ``torch.nn.utils.weight_norm``.

    Examples
    --------
    >>> import plugrad
    >>> import warnings
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore")
    ...     layer = plugrad.nn.utils.weight_norm(plugrad.nn.Linear(3, 2))
    >>> sorted(name for name, _ in layer.named_parameters())
    ['bias', 'weight_g', 'weight_v']
    """
    warnings.warn(
        "plugrad.nn.utils.weight_norm is deprecated, as in PyTorch, in favor of "
        "plugrad.nn.utils.parametrizations.weight_norm",
        FutureWarning,
        stacklevel=2,
    )
    for hook in _weight_norm_hooks(module):
        if hook.name == name:
            raise RuntimeError(f"weight_norm(): {name!r} of this module is normalized already")
    weight = module._parameters.get(name)
    if not isinstance(weight, Parameter):
        raise ValueError(f"weight_norm(): {type(module).__name__} has no parameter {name!r}")
    hook = WeightNorm(name, -1 if dim is None else dim)
    with no_grad():
        g = norm_except_dim(weight, hook.dim).detach()
    del module._parameters[name]
    module.register_parameter(name + "_g", Parameter(g))
    module.register_parameter(name + "_v", Parameter(weight.detach()))
    object.__setattr__(module, name, hook.compute_weight(module))
    module.register_forward_pre_hook(hook)
    return module


def remove_weight_norm(module: Module, name: str = "weight") -> Module:
    """Undo :func:`weight_norm`: ``name`` is a parameter again, holding the current weight."""
    for entry, hook in _weight_norm_hooks(module, with_entries=True):
        if hook.name != name:
            continue
        with no_grad():
            weight = hook.compute_weight(module).detach()
        object.__delattr__(module, name)
        del module._parameters[name + "_g"], module._parameters[name + "_v"]
        module.register_parameter(name, Parameter(weight))
        hooks = module._module_hooks
        assert hooks is not None  # (the hook was found there)
        hooks.forward_pre.remove(entry)
        return module
    raise ValueError(f"remove_weight_norm(): weight_norm of {name!r} not found in {module}")


def _weight_norm_hooks(module: Module, with_entries: bool = False) -> Any:
    """The :class:`WeightNorm` pre-hooks of ``module`` (with their hook-list entries)."""
    hooks = module._module_hooks
    entries = [] if hooks is None else hooks.forward_pre
    found = [(entry, entry.hook) for entry in entries if isinstance(entry.hook, WeightNorm)]
    return found if with_entries else [hook for _, hook in found]
