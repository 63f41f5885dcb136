"""Pruning: parts of a parameter zeroed by a mask, as PyTorch's ``torch.nn.utils.prune``.

Pruning the parameter ``name`` of a module replaces it by the parameter
``name + "_orig"`` (the values, still learned) and the buffer ``name + "_mask"``
(ones where a value is kept, zeros where it is pruned); a forward pre-hook sets
the plain attribute ``name`` to ``orig * mask`` before each call, so that the
pruned entries take part in no output and get no gradient. Pruning the same
parameter again prunes among the entries still kept: the methods gather in a
:class:`PruningContainer` and the masks multiply. :func:`remove` makes the
pruning permanent (``name`` is a parameter again, holding ``orig * mask``).

``amount`` is a number of units (an int) or a fraction of them (a float in
``[0, 1]``, rounded to the nearest count, halves to even); the units are entries
for the unstructured methods, slices along ``dim`` for the structured ones. The
random methods draw from plugrad's generator (:func:`plugrad.manual_seed`).

Examples
--------
>>> import plugrad
>>> from plugrad.nn.utils import prune
>>> layer = plugrad.nn.Linear(3, 2)
>>> with plugrad.no_grad():
...     _ = layer.weight.copy_(plugrad.tensor([[1.0, -5.0, 2.0], [0.5, 4.0, -3.0]]))
>>> _ = prune.l1_unstructured(layer, "weight", amount=2)
>>> layer.weight
tensor([[ 0., -5.,  2.],
        [ 0.,  4., -3.]], grad_fn=<MulBackward>)
>>> sorted(layer.state_dict())
['bias', 'weight_mask', 'weight_orig']
"""

from __future__ import annotations

import numbers
from abc import ABC, abstractmethod
from collections.abc import Iterable, Iterator
from typing import Any

from ... import ops as _ops
from ...creation import ones_like, zeros
from ...errors import (
    ArgumentError,
    AxisError,
    InvalidArgumentError,
    MissingAttributeError,
    ShapeError,
)
from ...grad_mode import no_grad
from ...random import rand
from ...tensor import Tensor
from ..module import Module
from ..parameter import Parameter
from .norm_hooks import _hooks_of, remove_pre_hook, restore_parameter

__all__ = [
    "BasePruningMethod",
    "CustomFromMask",
    "Identity",
    "L1Unstructured",
    "LnStructured",
    "PruningContainer",
    "RandomStructured",
    "RandomUnstructured",
    "custom_from_mask",
    "global_unstructured",
    "identity",
    "is_pruned",
    "l1_unstructured",
    "ln_structured",
    "random_structured",
    "random_unstructured",
    "remove",
]


class BasePruningMethod(ABC):
    """The base class of pruning methods: a subclass sets ``PRUNING_TYPE``
    (``"unstructured"``, ``"structured"`` with a ``dim`` attribute, or ``"global"``)
    and defines :meth:`compute_mask`.

    An instance is the forward pre-hook of the module it prunes, which recomputes
    ``module.<name>`` as ``<name>_orig * <name>_mask`` before each call.

    Examples
    --------
    >>> import plugrad
    >>> from plugrad.nn.utils import prune
    >>> class Negatives(prune.BasePruningMethod):
    ...     PRUNING_TYPE = "unstructured"
    ...     def compute_mask(self, t, default_mask):
    ...         return default_mask * (t >= 0)
    >>> layer = plugrad.nn.Linear(2, 1)
    >>> with plugrad.no_grad():
    ...     _ = layer.weight.copy_(plugrad.tensor([[-1.0, 2.0]]))
    >>> _ = Negatives.apply(layer, "weight")
    >>> layer.weight_mask
    tensor([[0., 1.]])
    """

    PRUNING_TYPE: str
    _tensor_name: str | None = None
    #: The name of the function the user called, for error messages.
    _called_as: str | None = None

    def __call__(self, module: Module, inputs: Any) -> None:
        object.__setattr__(module, self._name("pruning"), self.apply_mask(module))

    @abstractmethod
    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        """The mask for ``t``, pruning among the entries where ``default_mask`` is not zero
        (the mask of an earlier pruning), of ``default_mask``'s shape."""

    def apply_mask(self, module: Module) -> Tensor:
        """``<name>_orig * <name>_mask`` of ``module``: the pruned tensor."""
        name = self._name("apply_mask()")
        orig = getattr(module, name + "_orig")
        mask = getattr(module, name + "_mask")
        return orig * (mask if mask.dtype == orig.dtype else mask.to(orig.dtype))

    def _name(self, what: str) -> str:
        if self._tensor_name is None:
            raise InvalidArgumentError(
                f"{what}: this {type(self).__name__} prunes no module yet; prune one with "
                f"{type(self).__name__}.apply(module, name, ...)"
            )
        return self._tensor_name

    def _caller(self) -> str:
        return self._called_as or f"{type(self).__name__}.compute_mask()"

    @classmethod
    def apply(
        cls, module: Module, name: str, *args: Any, importance_scores: Tensor | None = None,
        **kwargs: Any,
    ) -> BasePruningMethod:  # fmt: skip
        """Prune the parameter ``name`` of ``module`` by ``cls(*args, **kwargs)``, ranking
        its entries by ``importance_scores`` (by the parameter itself if None); returns
        the pre-hook now pruning it (a :class:`PruningContainer` if it was pruned before)."""
        return _apply(cls, f"{cls.__name__}.apply()", module, name, args, kwargs, importance_scores)

    def prune(
        self, t: Tensor, default_mask: Tensor | None = None,
        importance_scores: Tensor | None = None,
    ) -> Tensor:  # fmt: skip
        """``t`` pruned by this method (no module involved): ``t * mask``."""
        scores = _checked_scores(t, importance_scores, f"{type(self).__name__}.prune()")
        if default_mask is None:
            default_mask = ones_like(t)
        with no_grad():
            mask = self.compute_mask(scores, default_mask=default_mask)
        return t * mask.detach()

    def remove(self, module: Module) -> None:
        """Make the pruning permanent: ``<name>`` is a parameter again (the Parameter object
        that was ``<name>_orig``, so optimizers holding it go on), holding the pruned values;
        ``<name>_orig`` and ``<name>_mask`` are gone. The hook itself stays registered (the
        function :func:`remove` unregisters it)."""
        name = self._name("remove()")
        with no_grad():
            weight = self.apply_mask(module).detach()
        orig = module._parameters.pop(name + "_orig")
        assert orig is not None  # (set up by apply(), a Parameter)
        with no_grad():
            orig.data = weight
        del module._buffers[name + "_mask"]
        restore_parameter(module, name, orig)


class PruningContainer(BasePruningMethod):
    """The pruning methods applied one after the other to the same parameter: the last one
    prunes among the entries the earlier ones kept.

    Examples
    --------
    >>> import plugrad
    >>> from plugrad.nn.utils import prune
    >>> layer = plugrad.nn.Linear(4, 2)
    >>> first = prune.RandomUnstructured.apply(layer, "weight", amount=0.5)
    >>> both = prune.RandomUnstructured.apply(layer, "weight", amount=0.5)
    >>> type(both).__name__, len(both), int(layer.weight_mask.sum())
    ('PruningContainer', 2, 2)
    """

    def __init__(self, *args: BasePruningMethod) -> None:
        self._pruning_methods: tuple[BasePruningMethod, ...] = ()
        if args:
            self._tensor_name = args[0]._tensor_name
        for method in args:
            self.add_pruning_method(method)

    def add_pruning_method(self, method: BasePruningMethod) -> None:
        """Append ``method``, which must prune the same parameter as the others."""
        if method is None:
            return
        if not isinstance(method, BasePruningMethod):
            raise ArgumentError(
                f"PruningContainer.add_pruning_method(): a {type(method).__name__} is no "
                "pruning method; give an instance of a BasePruningMethod subclass"
            )
        if not self._pruning_methods and self._tensor_name is None:
            self._tensor_name = method._tensor_name
        if method._tensor_name != self._tensor_name:
            raise InvalidArgumentError(
                f"PruningContainer.add_pruning_method(): this container prunes "
                f"{self._tensor_name!r}, the method prunes {method._tensor_name!r}; a "
                "container holds the methods of one parameter"
            )
        self._pruning_methods += (method,)

    def __len__(self) -> int:
        return len(self._pruning_methods)

    def __iter__(self) -> Iterator[BasePruningMethod]:
        return iter(self._pruning_methods)

    def __getitem__(self, index: int) -> BasePruningMethod:
        return self._pruning_methods[index]

    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        """``default_mask`` further pruned by the last method, among the units it keeps."""
        if not self._pruning_methods:
            raise InvalidArgumentError(
                "PruningContainer.compute_mask(): the container holds no method; add one "
                "with add_pruning_method()"
            )
        return _combined_mask(self._pruning_methods[-1], t, default_mask)


def _combined_mask(method: BasePruningMethod, t: Tensor, mask: Tensor) -> Tensor:
    """``mask`` (the masks so far) times ``method``'s mask computed on the part of ``t``
    that ``mask`` keeps: the kept entries (unstructured), the slices along ``method.dim``
    that keep an entry (structured), or all of ``t`` (global)."""
    kind = getattr(method, "PRUNING_TYPE", None)
    combined = mask.to(t.dtype).clone()
    if kind == "global":
        partial = method.compute_mask(t, default_mask=mask)
        return partial.to(combined.dtype)
    if kind == "unstructured":
        kept = mask == 1
        partial = method.compute_mask(t[kept], default_mask=mask[kept])
        combined[kept] = partial.to(combined.dtype)
        return combined
    if kind == "structured":
        if not hasattr(method, "dim"):
            raise MissingAttributeError(
                f"{type(method).__name__} has PRUNING_TYPE 'structured' but no attribute "
                "'dim'; a structured method sets the dimension it prunes slices of as self.dim"
            )
        dim = _axis(t, method.dim, method._caller())
        others = tuple(d for d in range(t.ndim) if d != dim)
        (channels,) = _ops.nonzero(_ops.sum(mask, dim=others) != 0)
        partial = method.compute_mask(
            _ops.index_select(t, dim, channels),
            default_mask=_ops.index_select(mask, dim, channels),
        )
        place = (slice(None),) * dim + (channels,)
        combined[place] = partial.to(combined.dtype)
        return combined
    raise InvalidArgumentError(
        f"{type(method).__name__} has PRUNING_TYPE {kind!r}; a pruning method's is "
        "'unstructured', 'structured' or 'global'"
    )


def _checked_amount(amount: Any, caller: str) -> int | float:
    if isinstance(amount, bool) or not isinstance(amount, numbers.Real):
        raise ArgumentError(
            f"{caller}: amount must be an int (how many units to prune) or a float in [0, 1] "
            f"(which fraction of them), got {type(amount).__name__} {amount!r}"
        )
    if isinstance(amount, numbers.Integral):
        if amount < 0:
            raise InvalidArgumentError(
                f"{caller}: amount={amount} is negative; give the number of units to prune "
                "(0 or more) or a fraction in [0, 1]"
            )
        return int(amount)
    if not 0.0 <= float(amount) <= 1.0:
        raise InvalidArgumentError(
            f"{caller}: amount={amount} is a fraction outside [0, 1]; give a fraction in "
            "[0, 1] or the number of units to prune as an int"
        )
    return float(amount)


def _count(amount: int | float, units: int, what: str, caller: str) -> int:
    """How many of ``units`` ``amount`` prunes (a fraction rounded as Python's round)."""
    count = amount if isinstance(amount, int) else round(amount * units)
    if count > units:
        raise InvalidArgumentError(
            f"{caller}: amount={amount} is more than the {units} {what} there are to prune; "
            f"give at most {units}, or a fraction in [0, 1]"
        )
    return count


def _axis(t: Tensor, dim: int, caller: str) -> int:
    if not -t.ndim <= dim < t.ndim:
        raise AxisError(
            f"{caller}: dim={dim} is out of range for a tensor of shape {tuple(t.shape)}; "
            f"give a dim in [{-t.ndim}, {t.ndim - 1}]"
        )
    return dim % t.ndim


def _check_structured(t: Tensor, caller: str) -> None:
    if t.ndim <= 1:
        raise ShapeError(
            f"{caller}: structured pruning removes slices of a tensor of 2 or more "
            f"dimensions, got one of shape {tuple(t.shape)}; prune it with an unstructured "
            "method (l1_unstructured, random_unstructured)"
        )


def _channel_mask(t: Tensor, dim: int, kept: Tensor) -> Tensor:
    """Ones on the slices ``kept`` (indices along ``dim``) of ``t``'s shape, zeros elsewhere."""
    channels = zeros(t.shape[dim], dtype=t.dtype, device=t.device)
    channels[kept] = 1
    shape = [1] * t.ndim
    shape[dim] = t.shape[dim]
    return _ops.broadcast_to(_ops.reshape(channels, tuple(shape)), tuple(t.shape))


def _zeroed(default_mask: Tensor, flat_indices: Tensor) -> Tensor:
    """``default_mask`` with the entries at ``flat_indices`` (of its flattening) zero."""
    flat = _ops.reshape(default_mask, (-1,)).clone()
    flat[flat_indices] = 0
    return _ops.reshape(flat, tuple(default_mask.shape))


class Identity(BasePruningMethod):
    """Prunes nothing: the mask is all ones (the module gets the pruning machinery, e.g. to
    load a pruned model's state dict)."""

    PRUNING_TYPE = "unstructured"

    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        return default_mask

    @classmethod
    def apply(cls, module: Module, name: str) -> BasePruningMethod:  # type: ignore[override]
        """Set up pruning of ``module.<name>`` with an all-ones mask."""
        return super().apply(module, name)


class _EntriesPruned(BasePruningMethod):
    """Prunes ``amount`` entries, the ones ``_chosen`` picks."""

    PRUNING_TYPE = "unstructured"

    def __init__(self, amount: int | float) -> None:
        self.amount = _checked_amount(amount, type(self).__name__)

    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        count = _count(self.amount, t.numel(), "entries", self._caller())
        if count == 0:
            return default_mask.clone()
        return _zeroed(default_mask, self._chosen(t, count))

    def _chosen(self, t: Tensor, count: int) -> Tensor:
        raise NotImplementedError


class RandomUnstructured(_EntriesPruned):
    """Prunes ``amount`` entries drawn at random (from plugrad's generator)."""

    def _chosen(self, t: Tensor, count: int) -> Tensor:
        return _ops.topk(rand(t.numel(), device=t.device), count)[1]

    @classmethod
    def apply(cls, module: Module, name: str, amount: int | float) -> BasePruningMethod:  # type: ignore[override]
        """Prune ``amount`` random entries of ``module.<name>``."""
        return super().apply(module, name, amount=amount)


class L1Unstructured(_EntriesPruned):
    """Prunes the ``amount`` entries of smallest magnitude."""

    def _chosen(self, t: Tensor, count: int) -> Tensor:
        magnitudes = _ops.reshape(_ops.abs(t), (-1,))
        return _ops.topk(magnitudes, count, largest=False)[1]

    @classmethod
    def apply(  # type: ignore[override]
        cls, module: Module, name: str, amount: int | float,
        importance_scores: Tensor | None = None,
    ) -> BasePruningMethod:  # fmt: skip
        """Prune the ``amount`` entries of ``module.<name>`` of smallest magnitude (of
        smallest ``importance_scores`` if given)."""
        return super().apply(module, name, amount=amount, importance_scores=importance_scores)


class _SlicesPruned(BasePruningMethod):
    """Prunes ``amount`` slices along ``dim``: those ``_ranks`` ranks lowest."""

    PRUNING_TYPE = "structured"
    amount: int | float
    dim: int

    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        caller = self._caller()
        _check_structured(t, caller)
        dim = _axis(t, self.dim, caller)
        units = t.shape[dim]
        count = _count(self.amount, units, f"slices along dim {self.dim}", caller)
        if count == 0:
            return default_mask
        kept = _ops.topk(self._ranks(t, dim), units - count)[1]
        return _channel_mask(t, dim, kept) * default_mask.to(t.dtype)

    def _ranks(self, t: Tensor, dim: int) -> Tensor:
        raise NotImplementedError


class RandomStructured(_SlicesPruned):
    """Prunes ``amount`` slices along ``dim`` drawn at random (whole rows, channels...)."""

    def __init__(self, amount: int | float, dim: int = -1) -> None:
        self.amount = _checked_amount(amount, "RandomStructured")
        self.dim = dim

    def _ranks(self, t: Tensor, dim: int) -> Tensor:
        return rand(t.shape[dim], device=t.device)

    @classmethod
    def apply(  # type: ignore[override]
        cls, module: Module, name: str, amount: int | float, dim: int
    ) -> BasePruningMethod:
        """Prune ``amount`` random slices along ``dim`` of ``module.<name>``."""
        return super().apply(module, name, amount=amount, dim=dim)


class LnStructured(_SlicesPruned):
    """Prunes the ``amount`` slices along ``dim`` of smallest ``n``-norm (``n`` a number,
    ``inf``, ``-inf`` or ``"fro"``)."""

    def __init__(self, amount: int | float, n: int | float | str, dim: int = -1) -> None:
        self.amount = _checked_amount(amount, "LnStructured")
        if n == "fro":
            n = 2
        if isinstance(n, bool) or not isinstance(n, numbers.Real):
            raise ArgumentError(
                f"LnStructured: n is the order of the norm ranking the slices: a number, "
                f"math.inf, -math.inf or 'fro', got {n!r}"
            )
        self.n: int | float = n
        self.dim = dim

    def _ranks(self, t: Tensor, dim: int) -> Tensor:
        others = tuple(d for d in range(t.ndim) if d != dim)
        return _ops.vector_norm(t, ord=self.n, dim=others)

    @classmethod
    def apply(  # type: ignore[override]
        cls, module: Module, name: str, amount: int | float, n: int | float | str, dim: int,
        importance_scores: Tensor | None = None,
    ) -> BasePruningMethod:  # fmt: skip
        """Prune the ``amount`` slices along ``dim`` of ``module.<name>`` of smallest
        ``n``-norm (of ``importance_scores`` if given)."""
        return super().apply(
            module, name, amount=amount, n=n, dim=dim, importance_scores=importance_scores
        )


class CustomFromMask(BasePruningMethod):
    """Prunes where ``mask`` is zero."""

    PRUNING_TYPE = "global"

    def __init__(self, mask: Tensor) -> None:
        if not isinstance(mask, Tensor):
            raise ArgumentError(f"CustomFromMask: mask must be a Tensor, got {type(mask).__name__}")
        self.mask = mask

    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        if tuple(default_mask.shape) != tuple(self.mask.shape):
            raise ShapeError(
                f"{self._caller()}: the mask has shape {tuple(self.mask.shape)}, the tensor "
                f"pruned {tuple(default_mask.shape)}; give a mask of the parameter's shape"
            )
        return default_mask * self.mask.to(default_mask.dtype)

    @classmethod
    def apply(cls, module: Module, name: str, mask: Tensor) -> BasePruningMethod:  # type: ignore[override]
        """Prune ``module.<name>`` where ``mask`` is zero."""
        return super().apply(module, name, mask=mask)


def _checked_scores(t: Tensor, scores: Tensor | None, caller: str) -> Tensor:
    if scores is None:
        return t
    if not isinstance(scores, Tensor):
        raise ArgumentError(
            f"{caller}: importance_scores must be a Tensor, got {type(scores).__name__}"
        )
    if tuple(scores.shape) != tuple(t.shape):
        raise ShapeError(
            f"{caller}: importance_scores has shape {tuple(scores.shape)}, the parameter "
            f"{tuple(t.shape)}; give one score per entry of the parameter"
        )
    return scores


def _pruning_hook(module: Module, name: str) -> tuple[Any, BasePruningMethod] | None:
    """The hook-list entry and pruning method that prune ``module.<name>``, if any."""
    for entry, hook in _hooks_of(module, BasePruningMethod, with_entries=True):
        if hook._tensor_name == name:
            return entry, hook
    return None


def _target(module: Module, name: str, caller: str) -> Tensor:
    """What ``module.<name>`` holds, checked prunable: a parameter, or a pruned one."""
    if not isinstance(module, Module):
        raise ArgumentError(
            f"{caller}: module must be a plugrad.nn.Module, got {type(module).__name__}"
        )
    if not isinstance(name, str):
        raise ArgumentError(f"{caller}: name must be a str, got {type(name).__name__}")
    if _pruning_hook(module, name) is not None:
        return getattr(module, name)
    value = module._parameters.get(name)
    if isinstance(value, Parameter):
        for suffix in ("_orig", "_mask"):
            if hasattr(module, name + suffix):
                raise InvalidArgumentError(
                    f"{caller}: {type(module).__name__} has an attribute {name + suffix!r} "
                    f"already, where pruning {name!r} would put its own; rename it"
                )
        return value
    if name in module._parameters or name in module._buffers or hasattr(module, name):
        raise ArgumentError(
            f"{caller}: {name!r} of {type(module).__name__} is no parameter (a "
            f"{type(getattr(module, name, None)).__name__}); only parameters can be pruned"
        )
    names = ", ".join(repr(n) for n, p in module._parameters.items() if p is not None)
    raise MissingAttributeError(
        f"{caller}: {type(module).__name__} has no parameter {name!r} (its parameters: "
        f"{names or 'none'})"
    )


def _apply(
    cls: type[BasePruningMethod], caller: str, module: Module, name: str,
    args: tuple[Any, ...], kwargs: dict[str, Any], importance_scores: Tensor | None,
) -> BasePruningMethod:  # fmt: skip
    """Prune ``module.<name>`` by ``cls(*args, **kwargs)``; everything is checked and the
    mask computed before the module changes, so that an error leaves it as it was."""
    target = _target(module, name, caller)
    method = cls(*args, **kwargs)
    method._tensor_name, method._called_as = name, caller
    scores = _checked_scores(target, importance_scores, caller)
    found = _pruning_hook(module, name)
    with no_grad():
        if found is None:
            mask = method.compute_mask(scores, default_mask=ones_like(target))
        else:
            previous = getattr(module, name + "_mask").detach().clone()
            mask = _combined_mask(method, scores, previous)
    mask = mask.detach()
    if found is None:
        hook: BasePruningMethod = method
        del module._parameters[name]
        module.register_parameter(name + "_orig", target)  # type: ignore[arg-type]
        module.register_buffer(name + "_mask", mask)
    else:
        entry, old = found
        remove_pre_hook(module, entry)
        if isinstance(old, PruningContainer):
            old.add_pruning_method(method)
            hook = old
        else:
            hook = PruningContainer(old, method)
        module._buffers[name + "_mask"] = mask
    object.__setattr__(module, name, hook.apply_mask(module))
    module.register_forward_pre_hook(hook)
    return hook


def identity(module: Module, name: str) -> Module:
    """Set up the pruning of ``module.<name>`` with a mask of ones (nothing pruned).

    Examples
    --------
    >>> import plugrad
    >>> from plugrad.nn.utils import prune
    >>> layer = prune.identity(plugrad.nn.Linear(2, 1), "bias")
    >>> layer.bias_mask
    tensor([1.])
    """
    _apply(Identity, "identity()", module, name, (), {}, None)
    return module


def random_unstructured(module: Module, name: str, amount: int | float) -> Module:
    """Prune ``amount`` entries of ``module.<name>`` drawn at random (an int: that many; a
    float in [0, 1]: that fraction of the entries still kept).

    Examples
    --------
    >>> import plugrad
    >>> from plugrad.nn.utils import prune
    >>> layer = prune.random_unstructured(plugrad.nn.Linear(4, 5), "weight", amount=0.25)
    >>> int((layer.weight_mask == 0).sum())
    5
    """
    _apply(
        RandomUnstructured, "random_unstructured()", module, name,
        (_checked_amount(amount, "random_unstructured()"),), {}, None,
    )  # fmt: skip
    return module


def l1_unstructured(
    module: Module, name: str, amount: int | float, importance_scores: Tensor | None = None
) -> Module:
    """Prune the ``amount`` entries of ``module.<name>`` of smallest magnitude (or of
    smallest ``importance_scores``, a tensor of the parameter's shape).

    Examples
    --------
    >>> import plugrad
    >>> from plugrad.nn.utils import prune
    >>> layer = plugrad.nn.Linear(2, 1)
    >>> with plugrad.no_grad():
    ...     _ = layer.weight.copy_(plugrad.tensor([[0.1, -2.0]]))
    >>> prune.l1_unstructured(layer, "weight", amount=1).weight_mask
    tensor([[0., 1.]])
    """
    amount = _checked_amount(amount, "l1_unstructured()")
    _apply(L1Unstructured, "l1_unstructured()", module, name, (amount,), {}, importance_scores)
    return module


def random_structured(module: Module, name: str, amount: int | float, dim: int) -> Module:
    """Prune ``amount`` slices along ``dim`` of ``module.<name>`` drawn at random.

    Examples
    --------
    >>> import plugrad
    >>> from plugrad.nn.utils import prune
    >>> layer = prune.random_structured(plugrad.nn.Linear(3, 4), "weight", amount=1, dim=0)
    >>> [int(row.sum()) for row in layer.weight_mask].count(0)
    1
    """
    amount = _checked_amount(amount, "random_structured()")
    _apply(RandomStructured, "random_structured()", module, name, (amount, dim), {}, None)
    return module


def ln_structured(
    module: Module, name: str, amount: int | float, n: int | float | str, dim: int,
    importance_scores: Tensor | None = None,
) -> Module:  # fmt: skip
    """Prune the ``amount`` slices along ``dim`` of ``module.<name>`` (rows for ``dim=0`` of
    a linear layer's weight, output channels of a convolution's) of smallest ``n``-norm.

    Examples
    --------
    >>> import plugrad
    >>> from plugrad.nn.utils import prune
    >>> layer = plugrad.nn.Linear(2, 3)
    >>> with plugrad.no_grad():
    ...     _ = layer.weight.copy_(plugrad.tensor([[1.0, 1.0], [0.1, 0.2], [3.0, -1.0]]))
    >>> prune.ln_structured(layer, "weight", amount=1, n=2, dim=0).weight_mask
    tensor([[1., 1.],
            [0., 0.],
            [1., 1.]])
    """
    caller = "ln_structured()"
    amount = _checked_amount(amount, caller)
    _apply(LnStructured, caller, module, name, (amount, n, dim), {}, importance_scores)
    return module


def custom_from_mask(module: Module, name: str, mask: Tensor) -> Module:
    """Prune ``module.<name>`` where ``mask`` (of the parameter's shape) is zero.

    Examples
    --------
    >>> import plugrad
    >>> from plugrad.nn.utils import prune
    >>> layer = prune.custom_from_mask(plugrad.nn.Linear(2, 1), "bias", plugrad.tensor([0.0]))
    >>> layer.bias
    tensor([0.], grad_fn=<MulBackward>)
    """
    _apply(CustomFromMask, "custom_from_mask()", module, name, (mask,), {}, None)
    return module


def global_unstructured(
    parameters: Iterable[tuple[Module, str]],
    pruning_method: type[BasePruningMethod],
    importance_scores: dict[tuple[Module, str], Tensor] | None = None,
    **kwargs: Any,
) -> None:
    """Prune the ``(module, name)`` ``parameters`` together, as one vector: e.g. the
    ``amount`` entries of smallest magnitude among all of them (``pruning_method`` an
    unstructured method, built from ``kwargs``). ``importance_scores`` maps a pair to the
    scores ranking its entries.

    Examples
    --------
    >>> import plugrad
    >>> from plugrad.nn.utils import prune
    >>> a, b = plugrad.nn.Linear(2, 1, bias=False), plugrad.nn.Linear(2, 1, bias=False)
    >>> with plugrad.no_grad():
    ...     _ = a.weight.copy_(plugrad.tensor([[1.0, 4.0]]))
    ...     _ = b.weight.copy_(plugrad.tensor([[2.0, 3.0]]))
    >>> prune.global_unstructured(
    ...     [(a, "weight"), (b, "weight")], prune.L1Unstructured, amount=2)
    >>> a.weight_mask, b.weight_mask
    (tensor([[0., 1.]]), tensor([[0., 1.]]))
    """
    caller = "global_unstructured()"
    if not isinstance(parameters, Iterable):
        raise ArgumentError(
            f"{caller}: parameters must be an iterable of (module, name) pairs, got "
            f"{type(parameters).__name__}"
        )
    pairs = list(parameters)
    if importance_scores is None:
        importance_scores = {}
    if not isinstance(importance_scores, dict):
        raise ArgumentError(
            f"{caller}: importance_scores must be a dict from (module, name) pairs to "
            f"Tensors, got {type(importance_scores).__name__}"
        )
    if not pairs:
        raise InvalidArgumentError(f"{caller}: parameters is empty; give (module, name) pairs")
    for pair in pairs:
        if not (isinstance(pair, tuple) and len(pair) == 2):
            raise ArgumentError(
                f"{caller}: parameters must hold (module, name) pairs, got {pair!r}"
            )
    if not (isinstance(pruning_method, type) and issubclass(pruning_method, BasePruningMethod)):
        raise ArgumentError(
            f"{caller}: pruning_method must be a BasePruningMethod subclass "
            f"(prune.L1Unstructured, ...), got {pruning_method!r}"
        )
    method = pruning_method(**kwargs)
    method._tensor_name, method._called_as = "global", caller
    if method.PRUNING_TYPE != "unstructured":
        raise ArgumentError(
            f"{caller}: {pruning_method.__name__} is a {method.PRUNING_TYPE!r} method; global "
            "pruning takes unstructured ones (prune.L1Unstructured, prune.RandomUnstructured)"
        )
    targets = [_target(module, name, caller) for module, name in pairs]
    with no_grad():
        scores = [
            _checked_scores(t, importance_scores.get(pair), caller).detach()
            for t, pair in zip(targets, pairs)
        ]
        masks = [
            getattr(module, name + "_mask") if _pruning_hook(module, name) else ones_like(t)
            for t, (module, name) in zip(targets, pairs)
        ]
        final = _combined_mask(method, _flat(scores), _flat(masks).to(scores[0].dtype))
    start = 0
    for t, (module, name) in zip(targets, pairs):
        size = t.numel()
        custom_from_mask(module, name, _ops.reshape(final[start : start + size], tuple(t.shape)))
        start += size


def _flat(tensors: list[Tensor]) -> Tensor:
    return _ops.concat([_ops.reshape(t, (-1,)) for t in tensors])


def remove(module: Module, name: str) -> Module:
    """Make the pruning of ``module.<name>`` permanent: ``name`` is a parameter again,
    holding the pruned values, without the ``_orig`` parameter, ``_mask`` buffer and hook.

    Examples
    --------
    >>> import plugrad
    >>> from plugrad.nn.utils import prune
    >>> layer = prune.random_unstructured(plugrad.nn.Linear(3, 2), "weight", amount=2)
    >>> layer = prune.remove(layer, "weight")
    >>> sorted(layer.state_dict()), prune.is_pruned(layer)
    (['bias', 'weight'], False)
    """
    found = _pruning_hook(module, name)
    if found is None:
        raise InvalidArgumentError(
            f"remove(): {name!r} of {type(module).__name__} is not pruned; prune it first "
            "(prune.l1_unstructured(module, name, amount), ...)"
        )
    entry, hook = found
    hook.remove(module)
    remove_pre_hook(module, entry)
    return module


def is_pruned(module: Module) -> bool:
    """Whether ``module`` or one of its submodules has a pruned parameter.

    Examples
    --------
    >>> import plugrad
    >>> from plugrad.nn.utils import prune
    >>> model = plugrad.nn.Sequential(plugrad.nn.Linear(2, 2), plugrad.nn.ReLU())
    >>> prune.is_pruned(model), prune.is_pruned(prune.identity(model[0], "bias"))
    (False, True)
    """
    return any(_hooks_of(m, BasePruningMethod) for m in module.modules())
