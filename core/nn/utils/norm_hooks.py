"""PyTorch's older weight and spectral normalizations by forward pre-hooks
(``torch.nn.utils.weight_norm``, ``spectral_norm``); the parametrizations of
:mod:`plugrad.nn.utils.parametrizations` are their successors."""

from __future__ import annotations

import warnings
from typing import Any, TypeVar

from ... import ops as _ops
from ...errors import InvalidArgumentError
from ...grad_mode import no_grad
from ...tensor import Tensor
from .. import functional as F
from ..module import Module
from ..parameter import Parameter
from .parametrizations import (
    _check_power_iterations,
    _output_axis,
    norm_except_dim,
    random_singular_vectors,
    weight_as_matrix,
)

__all__ = ["remove_spectral_norm", "remove_weight_norm", "spectral_norm", "weight_norm"]

_Hook = TypeVar("_Hook", "WeightNorm", "SpectralNorm")


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
    weight = _parameter_to_normalize(module, name, WeightNorm, "weight_norm")
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
    entry, hook = _normalizing_hook(module, name, WeightNorm, "weight_norm")
    with no_grad():
        weight = hook.compute_weight(module).detach()
    del module._parameters[name + "_g"], module._parameters[name + "_v"]
    return _restored(module, name, weight, entry)


def _parameter_to_normalize(
    module: Module, name: str, kind: type[WeightNorm | SpectralNorm], function: str
) -> Parameter:
    """The parameter ``name`` that ``function`` (``"weight_norm"``, ``"spectral_norm"``) is
    to normalize with a ``kind`` pre-hook; refused if one normalizes it already, or if
    ``module`` has no such parameter."""
    for hook in _hooks_of(module, kind):
        if hook.name == name:
            raise InvalidArgumentError(
                f"{function}(): {name!r} of this module is normalized already; undo it with "
                f"remove_{function}(module, {name!r}) first"
            )
    weight = module._parameters.get(name)
    if not isinstance(weight, Parameter):
        raise InvalidArgumentError(
            f"{function}(): {type(module).__name__} has no parameter {name!r}; name one of "
            f"{sorted(module._parameters)}"
        )
    return weight


def _normalizing_hook(
    module: Module, name: str, kind: type[_Hook], function: str
) -> tuple[Any, _Hook]:
    """The ``kind`` pre-hook that ``function`` put on ``name``, with its hook-list entry
    (for :func:`_restored`); refused as ``remove_<function>`` if there is none."""
    for entry, hook in _hooks_of(module, kind, with_entries=True):
        if hook.name == name:
            return entry, hook
    raise InvalidArgumentError(f"remove_{function}(): {function} of {name!r} not found in {module}")


def _restored(module: Module, name: str, weight: Tensor, entry: Any) -> Module:
    """``module`` with the parameter ``name`` holding ``weight`` and its pre-hook
    ``entry`` gone: a normalization undone (its own tensors removed first)."""
    restore_parameter(module, name, Parameter(weight))
    remove_pre_hook(module, entry)
    return module


def restore_parameter(module: Module, name: str, param: Parameter) -> None:
    """Make ``param`` the parameter ``name`` again, in place of the plain attribute that a
    forward pre-hook recomputed under that name."""
    module.__dict__.pop(name, None)
    module.register_parameter(name, param)


def remove_pre_hook(module: Module, entry: Any) -> None:
    """Unregister the forward pre-hook ``entry`` found by :func:`_hooks_of`."""
    hooks = module._module_hooks
    assert hooks is not None  # (the hook was found there)
    hooks.forward_pre.remove(entry)


def _hooks_of(module: Module, kind: type, with_entries: bool = False) -> Any:
    """The forward pre-hooks of ``module`` that are ``kind`` instances (with their
    hook-list entries, for :func:`remove_pre_hook`)."""
    hooks = module._module_hooks
    entries = [] if hooks is None else hooks.forward_pre
    found = [(entry, entry.hook) for entry in entries if isinstance(entry.hook, kind)]
    return found if with_entries else [hook for _, hook in found]


class SpectralNorm:
    """The forward pre-hook that sets ``module.<name>`` to ``<name>_orig / sigma`` before each
    call, ``sigma`` estimated by power iteration (a step per call in training)."""

    def __init__(self, name: str, n_power_iterations: int, dim: int, eps: float) -> None:
        _check_power_iterations(n_power_iterations)
        self.name, self.n_power_iterations, self.dim, self.eps = name, n_power_iterations, dim, eps

    def compute_weight(self, module: Module, do_power_iteration: bool) -> Tensor:
        weight = getattr(module, self.name + "_orig")
        u, v = getattr(module, self.name + "_u"), getattr(module, self.name + "_v")
        matrix = weight_as_matrix(weight, self.dim)
        if do_power_iteration:
            with no_grad():
                for _ in range(self.n_power_iterations):
                    v = F.normalize(_ops.matmul(matrix.mT, u), dim=0, eps=self.eps)
                    u = F.normalize(_ops.matmul(matrix, v), dim=0, eps=self.eps)
                # The buffers are written in place, as PyTorch's (out=): the same tensors.
                getattr(module, self.name + "_u").copy_(u)
                getattr(module, self.name + "_v").copy_(v)
            u, v = u.clone(), v.clone()
        sigma = _ops.vecdot(u, _ops.matmul(matrix, v))
        return weight / sigma

    def __call__(self, module: Module, inputs: Any) -> None:
        weight = self.compute_weight(module, do_power_iteration=module.training)
        object.__setattr__(module, self.name, weight)


def spectral_norm(
    module: Module,
    name: str = "weight",
    n_power_iterations: int = 1,
    eps: float = 1e-12,
    dim: int | None = None,
) -> Module:
    """Divide the parameter ``name`` by its spectral norm before each call, as PyTorch's
    ``torch.nn.utils.spectral_norm``: the parameter is ``<name>_orig``, the power method's
    vectors the buffers ``<name>_u`` and ``<name>_v``.

    Examples
    --------
    >>> import plugrad
    >>> layer = plugrad.nn.utils.spectral_norm(plugrad.nn.Linear(4, 3))
    >>> sorted(layer.state_dict())
    ['bias', 'weight_orig', 'weight_u', 'weight_v']
    """
    weight = _parameter_to_normalize(module, name, SpectralNorm, "spectral_norm")
    if dim is None:
        dim = _output_axis(module)
    hook = SpectralNorm(name, n_power_iterations, dim, eps)
    u, v = random_singular_vectors(weight_as_matrix(weight.detach(), dim), eps)
    del module._parameters[name]
    module.register_parameter(name + "_orig", weight)
    object.__setattr__(module, name, weight.detach())
    module.register_buffer(name + "_u", u)
    module.register_buffer(name + "_v", v)
    module.register_forward_pre_hook(hook)
    return module


def remove_spectral_norm(module: Module, name: str = "weight") -> Module:
    """Undo :func:`spectral_norm`: ``name`` is a parameter again, holding the normalized
    weight."""
    entry, hook = _normalizing_hook(module, name, SpectralNorm, "spectral_norm")
    with no_grad():
        weight = hook.compute_weight(module, do_power_iteration=False).detach()
    del module._parameters[name + "_orig"]
    del module._buffers[name + "_u"], module._buffers[name + "_v"]
    return _restored(module, name, weight, entry)
