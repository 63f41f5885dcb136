"""The optimizer base class: parameter groups, per-parameter state, state dicts.

Concrete optimizers (:class:`~plugrad.optim.SGD`, :class:`~plugrad.optim.Adam`,
...) implement two small hooks; everything else, including checking what
users pass in and saving and restoring state, lives here. The checks of option
values and loaded state the hooks are made of are in ``checks.py``, the array
helpers of the updates in ``updates.py``.

Updates work on the raw backend arrays with the backend's in-place
operators (``array -= update``), so no graph is recorded, no Tensor is made
per operation and each parameter keeps its memory. A backend whose arrays
cannot be modified in place (e.g. JAX) gives a new array instead; the
parameter then points at it, so the Tensor object is still the same.
"""

from __future__ import annotations

import functools
import math
import re
from collections import defaultdict
from collections.abc import Callable, Collection, Iterable, Mapping
from typing import Any, TypeVar

from .. import inplace as _inplace
from .. import lazy as _lazy
from ..creation import asarray
from ..errors import ArgumentError, DtypeError, InvalidArgumentError, ShapeError
from ..grad_mode import enable_grad
from ..nn.module import zero_grads
from ..nn.module_state import _casts_exactly, _floating_into_floating
from ..tensor import Tensor, _wrap
from ..tensor_hooks import RemovableHandle
from ..transfer import move_array
from .hooks import (
    has_step_hooks,
    register_optimizer_step_post_hook,
    register_optimizer_step_pre_hook,
    registered,
    run_replacing,
    with_step_hooks,
)
from .updates import (
    complex_from_pairs,
    is_complex,
    overwrite,
    real_pairs,
    state_tensor,
    zeros_state,
)

__all__ = [
    "Optimizer",
    "ParamsT",
    "register_optimizer_step_post_hook",
    "register_optimizer_step_pre_hook",
]

#: What optimizers accept as ``params``: tensors, or dicts with a ``"params"`` entry.
ParamsT = Iterable[Tensor] | Iterable[dict[str, Any]]


class Optimizer:
    """Base class of the optimizers: holds parameter groups and per-parameter state.

    Parameters
    ----------
    params : iterable of Tensor, or iterable of dict
        The tensors to optimize: leaf tensors that require grad. Or parameter
        groups: dicts with a ``"params"`` entry (the group's tensors) and any
        options that differ from ``defaults`` for that group.
    defaults : dict
        The default value of every option (``lr``, ...).

    Attributes
    ----------
    param_groups : list of dict
        One dict per group: ``"params"`` (a list of tensors) and the group's
        options. Changing an option here (e.g. ``group["lr"] = 0.01``)
        changes the next :meth:`step`; learning-rate schedulers do exactly that.
    state : collections.defaultdict of dict
        Per-parameter state, keyed by the parameter tensor (e.g.
        ``state[p]["exp_avg"]``); a parameter has a filled entry once a step
        has updated it. As in PyTorch, reading the state of a parameter that
        has none gives an empty dict, so an optimizer written for PyTorch
        (``state = self.state[p]; if len(state) == 0: ...``) runs here.
    defaults : dict
        The options a group gets when it does not set them.

    Notes
    -----
    A subclass sets :attr:`defaults` through ``super().__init__(params,
    defaults)`` and implements ``_check_options(group)`` (raise for a bad
    option value), ``_check_state(param, state, group)`` (raise for a
    per-parameter state :meth:`load_state_dict` cannot use), and the update,
    either as ``_step_group(group)`` (update the group's parameters) or in two
    parts: ``_prepare_group(group)``, the Python part of a step (make missing
    state, count steps) returning the numbers the update multiplies arrays by
    (a list of floats: the learning rate, bias corrections), and
    ``_update_group(group, numbers)``, the array part, which uses each of those
    numbers only as an operand of an array operation (a choice between
    computations made from the state goes in ``_choices()``). Split so, a step runs
    under :func:`plugrad.compile` as array code, with the numbers recomputed at
    every replay (a learning-rate schedule, a step count); a step written as
    ``_step_group`` runs as one call the plan repeats. An optimizer that cannot
    take complex parameters sets ``_supports_complex = False``; one whose update
    is not linear in the gradient (it squares it, compares signs) sets
    ``_complex_as_real = True`` and steps each complex number as two real ones,
    as PyTorch's optimizers do: its ``_update_group`` then runs, for a group
    with complex parameters, on real stand-ins of shape ``(..., 2)`` (the
    parameter, its gradient and its state tensors), whose results are written
    back into the complex tensors in place.

    Examples
    --------
    Two parameter groups, the second with its own learning rate:

    >>> import plugrad
    >>> w = plugrad.tensor([1.0, 2.0], requires_grad=True)
    >>> b = plugrad.tensor(0.5, requires_grad=True)
    >>> opt = plugrad.optim.SGD([{"params": [w]}, {"params": [b], "lr": 0.5}], lr=0.1)
    >>> [group["lr"] for group in opt.param_groups]
    [0.1, 0.5]
    >>> (w.sum() + 2 * b).backward()
    >>> opt.step()
    >>> w, b
    (tensor([0.9000, 1.9000], requires_grad=True), tensor(-0.5000, requires_grad=True))
    """

    #: False for an optimizer that refuses complex parameters when they are added (Adafactor,
    #: as PyTorch's).
    _supports_complex = True
    #: True for an optimizer that steps a complex number as two real ones (Adam, ...: the
    #: square of a complex gradient is not its magnitude): its _update_group is wrapped by
    #: _stepping_complex_as_real, so its math is written for real arrays only.
    _complex_as_real = False
    #: For :meth:`_defaults_from`: the options in the order of ``defaults`` (PyTorch's),
    #: where it is not the constructor's; and those given as pairs.
    _options: tuple[str, ...] = ()
    _pairs: tuple[str, ...] = ()
    #: For :meth:`_new_state`: the state tensors of zeros a parameter's first step makes.
    _buffers: tuple[str, ...] = ()
    #: Options a step reads only through the numbers of :meth:`_prepare_group`, so that a
    #: compiled step reads them afresh at every replay: those schedulers change (lr, and the
    #: momentum or betas of OneCycleLR and CyclicLR). What the array part decides from
    #: their values is in the compile key instead (:meth:`_structure_of`).
    _fresh_options: frozenset[str] = frozenset({"lr"})
    # (see register_step_pre_hook and the others)
    _optimizer_step_pre_hooks: list[Callable[..., Any]]
    _optimizer_step_post_hooks: list[Callable[..., Any]]
    _optimizer_state_dict_pre_hooks: list[Callable[..., Any]]
    _optimizer_state_dict_post_hooks: list[Callable[..., Any]]
    _optimizer_load_state_dict_pre_hooks: list[Callable[..., Any]]
    _optimizer_load_state_dict_post_hooks: list[Callable[..., Any]]

    def __init__(self, params: ParamsT, defaults: dict[str, Any]) -> None:
        self.defaults = dict(defaults)
        self.param_groups: list[dict[str, Any]] = []
        self.state: defaultdict[Tensor, dict[str, Any]] = defaultdict(dict)
        # Counts step() calls; learning-rate schedulers check it to catch a wrong call order.
        self._step_count = 0
        # PyTorch's names: code written for it may read them.
        self._no_hooks()
        if isinstance(params, Tensor):
            raise ArgumentError(
                f"{type(self).__name__} takes an iterable of tensors (or of parameter-group "
                "dicts) as params, not a single Tensor; pass [tensor]"
            )
        _refuse_unordered(params, type(self).__name__)
        groups: list[Any] = list(params)
        if not groups:
            raise InvalidArgumentError(
                f"{type(self).__name__} got an empty parameter list; pass the tensors to optimize"
            )
        if not isinstance(groups[0], dict):
            groups = [{"params": groups}]  # tensors, or (name, tensor) pairs
        for group in groups:
            self.add_param_group(group)

    # -- groups ------------------------------------------------------------------------

    def add_param_group(self, param_group: dict[str, Any]) -> None:
        """Add a group of parameters with its own options (e.g. when unfreezing layers).

        Options the group does not set take the optimizer's defaults.

        Parameters
        ----------
        param_group : dict
            ``"params"``: a tensor or an iterable of tensors, none already
            optimized here; any other entry is an option for this group.

        Examples
        --------
        >>> import plugrad
        >>> w = plugrad.tensor([1.0], requires_grad=True)
        >>> opt = plugrad.optim.SGD([w], lr=0.1)
        >>> head = plugrad.tensor([0.0, 0.0], requires_grad=True)
        >>> opt.add_param_group({"params": head, "lr": 0.01})
        >>> len(opt.param_groups), opt.param_groups[1]["lr"], opt.param_groups[1]["momentum"]
        (2, 0.01, 0)
        """
        name = type(self).__name__
        if not isinstance(param_group, dict):
            raise ArgumentError(
                f"a parameter group is a dict with a 'params' entry, got a "
                f"{type(param_group).__name__}"
            )
        if "params" not in param_group:
            raise InvalidArgumentError(
                f"the parameter group has no 'params' entry (it has {sorted(param_group)}); "
                "give the tensors to optimize as {'params': [...], ...}"
            )
        given = param_group
        params = param_group["params"]
        if isinstance(params, Tensor):
            params = [params]
        else:
            _refuse_unordered(params, name)
            params = list(params)
        if not params:
            raise InvalidArgumentError(f"{name} got a parameter group with no parameters")
        named = [_is_named(p) for p in params]
        if any(named):
            # PyTorch's model.named_parameters(): the names are kept in the group.
            if not all(named):
                raise ArgumentError(
                    f"{name} got a parameter group mixing (name, tensor) pairs and tensors; "
                    "give all of them named (model.named_parameters()) or none"
                )
            param_group = {**param_group, "param_names": [n for n, _ in params]}
            params = [p for _, p in params]
        seen: set[int] = set()
        for index, param in enumerate(params):
            _check_param(param, index, name)
            if id(param) in seen:
                raise InvalidArgumentError(
                    f"parameter {index} of the group (shape {param.shape}) appears in it more than "
                    "once; pass each tensor once"
                )
            seen.add(id(param))
        for number, group in enumerate(self.param_groups):
            if any(id(p) in seen for p in group["params"]):
                raise InvalidArgumentError(
                    f"some parameters of the new group are already in parameter group {number}; "
                    "each tensor can be in one group only"
                )
        group = {**self.defaults, **param_group, "params": params}
        self._check_options(group)
        for param in params:
            self._check_param_dtype(param)
        # The caller's dict itself becomes the group, as PyTorch's (a change to it later
        # changes training), its entries first and the defaults it lacks after them.
        ordered = {key: group[key] for key in (*param_group, *self.defaults)}
        given.clear()
        given.update(ordered)
        self.param_groups.append(given)

    def _check_options(self, group: dict[str, Any]) -> None:
        """Raise ``ValueError``/``TypeError`` if an option of ``group`` is unusable."""

    def _defaults_from(self, arguments: Mapping[str, Any]) -> dict[str, Any]:
        """The ``defaults`` of a concrete optimizer, from its constructor's ``locals()``.

        Every argument but ``params``, in the constructor's order or that of
        :attr:`_options`, checked before any parameter is looked at; the pairs
        of :attr:`_pairs` (``betas``, ...) are kept as tuples once checked.
        """
        names = self._options or [
            name for name in arguments if name not in ("self", "params") and name[:2] != "__"
        ]  # (``__class__``: a method calling super() has it among its locals)
        defaults = {name: arguments[name] for name in names}
        self._check_options(defaults)
        for name in self._pairs:
            defaults[name] = tuple(defaults[name])
        return defaults

    def _check_param_dtype(self, param: Tensor) -> None:
        """Raise :class:`~plugrad.errors.DtypeError` for a parameter this optimizer cannot take."""
        if not self._supports_complex and param.dtype.kind == "complex floating":
            raise DtypeError(
                f"{type(self).__name__} does not support complex parameters (got one of shape "
                f"{param.shape}, {param.dtype.name}); optimize the real and imaginary parts as "
                "two real tensors, or use another optimizer (Adam, SGD, ... take them)"
            )

    # -- stepping ----------------------------------------------------------------------

    def _no_hooks(self) -> None:
        """Empty hook lists, under PyTorch's names (code written for it may read them)."""
        for name in _HOOK_LISTS:
            setattr(self, name, [])

    def __getstate__(self) -> dict[str, Any]:
        # Hooks are not pickled (nor deep-copied), as PyTorch's are not: often lambdas.
        return {k: v for k, v in self.__dict__.items() if k not in _HOOK_LISTS and k != "_in_step"}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._no_hooks()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "step" in cls.__dict__:  # a step of its own runs the step hooks too
            cls.step = with_step_hooks(cls.__dict__["step"])  # type: ignore[method-assign]
        # Wrapped here, not at a call site: eager steps, _step_group and a step that
        # plugrad.compile captures all call _update_group.
        update = cls._update_group
        if cls._complex_as_real and not getattr(update, "_steps_complex_as_real", False):
            cls._update_group = _stepping_complex_as_real(update)  # type: ignore[method-assign]

    # -- hooks -------------------------------------------------------------------------

    def register_step_pre_hook(self, hook: Callable[..., Any]) -> RemovableHandle:
        """Run ``hook(optimizer, args, kwargs)`` before each :meth:`step`; it returns None,
        or ``(args, kwargs)`` to call the step with instead. Returns a handle whose
        ``remove()`` unregisters it.

        Examples
        --------
        >>> import plugrad
        >>> w = plugrad.tensor([1.0], requires_grad=True)
        >>> opt = plugrad.optim.SGD([w], lr=0.5)
        >>> handle = opt.register_step_pre_hook(lambda o, args, kwargs: print("stepping"))
        >>> w.sum().backward()
        >>> opt.step()
        stepping
        >>> handle.remove()
        """
        return registered(self._optimizer_step_pre_hooks, hook)

    def register_step_post_hook(self, hook: Callable[..., Any]) -> RemovableHandle:
        """Run ``hook(optimizer, args, kwargs)`` after each :meth:`step` (an average of the
        weights kept beside the training, say). Returns a handle whose ``remove()``
        unregisters it."""
        return registered(self._optimizer_step_post_hooks, hook)

    def register_state_dict_pre_hook(
        self, hook: Callable[..., Any], prepend: bool = False
    ) -> RemovableHandle:
        """Run ``hook(optimizer)`` before :meth:`state_dict` builds the dict (first of the
        hooks with ``prepend``)."""
        return registered(self._optimizer_state_dict_pre_hooks, hook, prepend)

    def register_state_dict_post_hook(
        self, hook: Callable[..., Any], prepend: bool = False
    ) -> RemovableHandle:
        """Run ``hook(optimizer, state_dict)`` on the dict :meth:`state_dict` built; what it
        returns, unless None, is the dict returned (and handed to the next hook)."""
        return registered(self._optimizer_state_dict_post_hooks, hook, prepend)

    def register_load_state_dict_pre_hook(
        self, hook: Callable[..., Any], prepend: bool = False
    ) -> RemovableHandle:
        """Run ``hook(optimizer, state_dict)`` before :meth:`load_state_dict` reads the dict
        (a shallow copy of the one given); what it returns, unless None, is read instead."""
        return registered(self._optimizer_load_state_dict_pre_hooks, hook, prepend)

    def register_load_state_dict_post_hook(
        self, hook: Callable[..., Any], prepend: bool = False
    ) -> RemovableHandle:
        """Run ``hook(optimizer)`` after :meth:`load_state_dict` loaded the dict."""
        return registered(self._optimizer_load_state_dict_post_hooks, hook, prepend)

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Reset the gradients of every parameter.

        Parameters
        ----------
        set_to_none : bool, default True
            ``True``: set ``.grad`` to ``None`` (frees memory; the next step
            skips parameters that get no gradient). ``False``: fill the existing
            gradients with zeros, in place.

        Examples
        --------
        >>> import plugrad
        >>> w = plugrad.tensor([1.0, 2.0], requires_grad=True)
        >>> opt = plugrad.optim.SGD([w], lr=0.1)
        >>> (w * w).sum().backward()
        >>> opt.zero_grad(set_to_none=False)
        >>> w.grad
        tensor([0., 0.])
        >>> opt.zero_grad()
        >>> w.grad is None
        True
        """
        zero_grads((param for group in self.param_groups for param in group["params"]), set_to_none)

    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """Update every parameter that has a gradient, once.

        Parameters whose ``.grad`` is ``None`` are skipped. The update records
        nothing for autograd and writes into each parameter's memory.

        Parameters
        ----------
        closure : callable, optional
            Re-evaluates the model and returns the loss: it typically calls
            :meth:`zero_grad`, computes the loss and calls ``backward()``. It
            runs with grad mode on, even inside :func:`plugrad.no_grad`.

        Returns
        -------
        object
            What ``closure`` returned, or ``None`` without one.

        Examples
        --------
        >>> import plugrad
        >>> w = plugrad.tensor([3.0], requires_grad=True)
        >>> opt = plugrad.optim.SGD([w], lr=0.25)
        >>> def closure():
        ...     opt.zero_grad()
        ...     loss = (w * w).sum()
        ...     loss.backward()
        ...     return loss
        >>> opt.step(closure)
        tensor(9., grad_fn=<SumBackward>)
        >>> w
        tensor([1.5000], requires_grad=True)
        """
        self._check_lr_set()
        loss = None
        if closure is not None:
            with enable_grad():
                loss = closure()
        self._check_gradient_shapes()
        followers = self._views_to_follow()
        if type(self)._step_group is Optimizer._step_group:
            for group, numbers in zip(self.param_groups, self._advance()):
                self._update_group(plain_options(group), numbers)
        else:
            for group in self.param_groups:
                self._step_group(group)
            self._step_count += 1
        if followers:
            _inplace.follow_raw_writes(followers)
        if _lazy.in_use:
            self._settle()
        return loss

    def _check_lr_set(self) -> None:
        """Refuse the step, before any state is made, where a group's ``lr`` was set to None
        (``group["lr"] = None``): the update would fail half-way through the groups."""
        for index, group in enumerate(self.param_groups):
            if "lr" in group and group["lr"] is None:
                raise ArgumentError(
                    f"{type(self).__name__}.step(): param_groups[{index}]['lr'] is None; set "
                    "it to the learning rate (a number) before stepping; nothing was updated"
                )

    def _check_gradient_shapes(self) -> None:
        """Refuse the step, before any update, where a ``.grad`` changed shape in place.

        Assigning ``p.grad`` checks its shape, but ``p.grad.unsqueeze_(0)`` or
        ``p.grad.data = ...`` do not; the update would broadcast it into the
        parameter or its state, or fail half-way with state of the wrong shape.
        """
        for index, group in enumerate(self.param_groups):
            for position, param in enumerate(group["params"]):
                grad = param._grad
                if grad is not None and grad._array.shape != param._array.shape:
                    raise ShapeError(
                        f"{type(self).__name__}.step(): parameter {position} of group {index} "
                        f"has shape {param.shape} but its .grad has shape {grad.shape}; nothing "
                        "was updated (give the parameter a gradient of its own shape)"
                    )

    def _views_to_follow(self) -> list[tuple[Tensor, Any]]:
        """Where views are copies (JAX, Dask): the views of the parameters and of their state
        tensors that a step must update.

        Found (or the step refused, changing nothing) before any update, and
        brought up to date after it by :func:`plugrad.inplace.follow_raw_writes`;
        empty, for the cost of one flag read, where no such backend is in use.
        """
        if not _inplace.copies_in_use:
            return []
        stepped = [p for group in self.param_groups for p in group["params"] if p._grad is not None]
        # Their state too (a momentum buffer), which a step writes as raw arrays as well.
        state = [
            value
            for p in stepped
            for value in self.state.get(p, {}).values()
            if isinstance(value, Tensor)
        ]
        return _inplace.views_to_follow([*stepped, *state], f"{type(self).__name__}.step()")

    def _settle(self) -> None:
        """Keep the graphs of parameters and state bounded on lazy backends (plugrad.lazy).

        Each step extends them, and nothing else would cut them: state is read
        only here, by raw array arithmetic.
        """
        _lazy.settle_tensors(p for group in self.param_groups for p in group["params"])
        _lazy.settle_tensors(
            value
            for entry in self.state.values()
            for value in entry.values()
            if isinstance(value, Tensor)
        )

    def _advance(self) -> list[list[float]]:
        """The Python part of a step for every group: its numbers, one list per group."""
        numbers = [self._prepare_group(plain_options(group)) for group in self.param_groups]
        self._step_count += 1
        return numbers

    def _step_group(self, group: dict[str, Any]) -> None:
        """Update the parameters of one group from their gradients."""
        group = plain_options(group)
        self._update_group(group, self._prepare_group(group))

    def _new_state(self, param: Tensor, group: dict[str, Any]) -> dict[str, Any]:
        """The state of ``param`` before its first step: a step count of 0 and :attr:`_buffers`."""
        return {"step": 0, **{key: zeros_state(param) for key in self._buffers}}

    def _count_steps(
        self, group: dict[str, Any], optional: Collection[str] = ()
    ) -> list[dict[str, Any]]:
        """Count a step in the state of each parameter of ``group`` that has a gradient.

        Returns those states, in order. A parameter without state gets
        :meth:`_new_state`; the buffers named in ``optional`` (zeros) are made
        where missing: on the first step, or after the option that uses them
        was switched on.
        """
        state = self.state
        stepped = []
        for param in group["params"]:
            if param._grad is None:
                continue
            entry = state.get(param)
            if not entry:
                entry = state[param] = self._new_state(param, group)
            for key in optional:
                if entry.get(key) is None:
                    entry[key] = zeros_state(param)
            entry["step"] += 1
            stepped.append(entry)
        return stepped

    def _prepare_group(self, group: dict[str, Any]) -> list[float]:
        """The Python part of one group's step; return the numbers the update uses."""
        raise NotImplementedError(
            f"{type(self).__name__} implements neither _step_group() nor _prepare_group()"
        )

    def _update_group(self, group: dict[str, Any], numbers: list[float]) -> None:
        """The array part of one group's step, with the numbers of :meth:`_prepare_group`."""
        raise NotImplementedError(
            f"{type(self).__name__} implements neither _step_group() nor _update_group()"
        )

    def _compile_key(self) -> tuple[Any, ...]:
        """What a step captured by :func:`plugrad.compile` depends on besides array values.

        The parameters and state tensors (by identity), the kinds of the other
        state entries, and every option but those the step reads afresh at
        every replay (:attr:`_fresh_options`: for those, what
        :meth:`_structure_of` finds). A replayed step whose key differs from
        the captured one does not apply.
        """
        state = self.state
        fresh, structure_of = self._fresh_options, self._structure_of
        groups = []
        for group in self.param_groups:
            params = group["params"]
            # In the group's own order: an option added or removed changes the key anyway.
            options = [
                (option, structure_of(option, value) if option in fresh else value)
                for option, value in group.items()
                if option != "params"
            ]
            entries = None
            if state:
                entries = tuple(
                    None
                    if (entry := state.get(param)) is None
                    else tuple(
                        (k, id(v) if isinstance(v, Tensor) else type(v))
                        for k, v in sorted(entry.items())
                    )
                    for param in params
                )
            groups.append((tuple(map(id, params)), tuple(options), entries))
        # (with step hooks, a compiled step repeats the whole step, hooks and all)
        return (tuple(groups), self._choices(), has_step_hooks(self))

    def _choices(self) -> tuple[Any, ...]:
        """What the array part of the next step decides from the state's numbers.

        :meth:`_update_group` receives the numbers of :meth:`_prepare_group` as
        values a replay recomputes, which it may not compare; a choice between
        computations (ASGD's exact copy while its average is the parameter)
        is made from the state here instead, before the step, and a compiled
        step replays only where the choices are those of its capture. Empty by
        default.
        """
        return ()

    def _structure_of(self, option: str, value: Any) -> Any:
        """What the array part of a step decides from the value of a fresh option.

        :meth:`_update_group` reads a fresh option's value only through the
        numbers of :meth:`_prepare_group`, but may choose what to compute from
        it (whether a momentum buffer is used at all): a compiled step replays
        only where this is what it was at the capture. None where nothing is
        chosen (the default).
        """
        return None

    def _compile_key_check(self, me: str, constant: Callable[[Any], str]) -> str | None:
        """A Python expression true only where :meth:`_compile_key` equals its value now.

        A replayed step evaluates it at every call, where building the key
        itself would cost more than many small kernels (it sorts each state
        entry). The expression checks the same things one by one, with
        identity (``is``) where the key holds ids: the number of groups, each
        group's option names and values but the fresh ones, its parameters,
        and each parameter's state entry (its names, its tensors, the types of
        its other values). Where it is false the key may still be equal (a
        group's options in another order, an option that is NaN): the caller
        falls back to comparing keys. ``me`` is the optimizer's name in that
        code, ``constant`` names an object for it. None where no cheaper check
        can be written (a subclass with its own key, an option of another type).
        """
        if type(self)._compile_key is not Optimizer._compile_key:
            return None
        state = self.state
        fresh = self._fresh_options
        # The structure of a fresh option is checked unless no value has one (the default).
        structured = type(self)._structure_of is not Optimizer._structure_of
        structure_of = constant(self._structure_of) if structured else ""
        groups, entries = f"{me}_groups", f"{me}_state"
        parts = [f"len({groups} := {me}.param_groups) == {len(self.param_groups)}"]
        parts.append(f"({entries} := {me}.state)" if state else f"not {me}.state")
        for index, group in enumerate(self.param_groups):
            name = f"{me}_group{index}"
            parts.append(f"({name} := {groups}[{index}]).keys() == {constant(frozenset(group))}")
            for option, value in group.items():
                if option in fresh:
                    if structured:
                        found = constant(self._structure_of(option, value))
                        parts.append(f"{structure_of}({option!r}, {name}[{option!r}]) == {found}")
                    continue
                if option == "params":
                    continue
                if not _plain_option(value):
                    return None
                written = repr(value) if _finite(value) else constant(value)
                parts.append(f"{name}[{option!r}] == {written}")
            params = group["params"]
            members = f"{me}_params{index}"
            parts.append(f"len({members} := {name}['params']) == {len(params)}")
            parts += [f"{members}[{i}] is {constant(p)}" for i, p in enumerate(params)]
            if not state:
                continue
            for param in params:
                entry = state.get(param)
                if entry is None:
                    parts.append(f"{entries}.get({constant(param)}) is None")
                    continue
                found = f"{me}_entry"
                parts.append(
                    f"({found} := {entries}.get({constant(param)})) is not None and "
                    f"{found}.keys() == {constant(frozenset(entry))}"
                )
                for key, value in entry.items():
                    if isinstance(value, Tensor):
                        parts.append(f"{found}[{key!r}] is {constant(value)}")
                    else:
                        parts.append(f"type({found}[{key!r}]) is {constant(type(value))}")
        if type(self)._choices is not Optimizer._choices:
            parts.append(f"{me}._choices() == {constant(self._choices())}")
        parts.append(f"{constant(has_step_hooks)}({me}) is {has_step_hooks(self)}")
        return "(" + " and ".join(parts) + ")"

    # -- state dicts -------------------------------------------------------------------

    def state_dict(self) -> dict[str, Any]:
        """Return the optimizer's state and options as a dict of plain values and tensors.

        Parameters are replaced by their position (counting across groups, in
        order), as in PyTorch, so the dict can be loaded into an optimizer
        built the same way over other tensors. Each parameter's state is the
        live entry (its tensors and numbers, such as the step count), not a
        copy, as in PyTorch: save the dict (:func:`plugrad.save`) or deep-copy
        it before stepping again if you need a snapshot.

        Returns
        -------
        dict
            ``{"state": {index: {name: value}}, "param_groups": [{option: value,
            "params": [index, ...]}]}``.

        Examples
        --------
        >>> import plugrad
        >>> w = plugrad.tensor([1.0, 2.0], requires_grad=True)
        >>> opt = plugrad.optim.SGD([w], lr=0.1, momentum=0.9)
        >>> w.sum().backward()
        >>> opt.step()
        >>> opt.state_dict()["state"]
        {0: {'momentum_buffer': tensor([1., 1.])}}
        >>> opt.state_dict()["param_groups"][0]["params"]
        [0]
        """
        for hook in self._optimizer_state_dict_pre_hooks:
            hook(self)
        index_of: dict[int, int] = {}
        groups = []
        for group in self.param_groups:
            packed = {key: value for key, value in group.items() if key != "params"}
            packed["params"] = []
            for param in group["params"]:
                index_of[id(param)] = len(index_of)
                packed["params"].append(index_of[id(param)])
            groups.append(packed)
        # The entries themselves, as PyTorch's: a dict kept while stepping on stays whole
        # (a copy would keep an old step count beside the live buffers).
        state = {
            index_of[id(param)]: entry
            for param, entry in self.state.items()
            if id(param) in index_of
        }
        packed = {"state": state, "param_groups": groups}
        return run_replacing(self._optimizer_state_dict_post_hooks, self, packed)

    def load_state_dict(self, state_dict: Mapping[str, Any]) -> None:
        """Restore the state and options saved by :meth:`state_dict`.

        The optimizer must have been built over parameters of the same
        number and shapes, grouped the same way. State tensors (those in lists
        too) are copied to each parameter's device and dtype, as PyTorch's are,
        so the dict can come from another backend, or from the same PyTorch
        optimizer (its tensors and 0-d step counts are read as they are). A
        float state tensor is rounded to the parameter's dtype; one of integers
        or booleans is taken where the parameter's dtype holds its values
        exactly, and refused (:class:`~plugrad.errors.DtypeError`) where a cast
        would change them, as is a complex one for a real parameter. On any
        error nothing changes.

        Parameters
        ----------
        state_dict : dict
            What :meth:`state_dict` returned, possibly saved and loaded again.

        Examples
        --------
        >>> import plugrad
        >>> w = plugrad.tensor([1.0, 2.0], requires_grad=True)
        >>> opt = plugrad.optim.Adam([w], lr=0.1)
        >>> w.sum().backward()
        >>> opt.step()
        >>> fresh = plugrad.optim.Adam([w], lr=0.5)
        >>> fresh.load_state_dict(opt.state_dict())
        >>> fresh.param_groups[0]["lr"], fresh.state[w]["step"]
        (0.1, 1)
        """
        name = type(self).__name__
        pre_hooks = self._optimizer_load_state_dict_pre_hooks
        if pre_hooks and isinstance(state_dict, Mapping):
            # (a copy: a hook may change it, and the caller's stays as it was)
            state_dict = run_replacing(pre_hooks, self, dict(state_dict))
        if not isinstance(state_dict, Mapping) or set(state_dict) != {"state", "param_groups"}:
            found = sorted(state_dict) if isinstance(state_dict, Mapping) else type(state_dict)
            raise InvalidArgumentError(
                f"{name}.load_state_dict() takes the dict {name}.state_dict() returns, with keys "
                f"'state' and 'param_groups'; got {found}"
            )
        saved_groups, saved_state = state_dict["param_groups"], state_dict["state"]
        if not isinstance(saved_groups, list | tuple) or not isinstance(saved_state, Mapping):
            raise ArgumentError(
                "the state dict's 'param_groups' must be a list and its 'state' a dict, got "
                f"{type(saved_groups).__name__} and {type(saved_state).__name__}"
            )
        if len(saved_groups) != len(self.param_groups):
            raise InvalidArgumentError(
                f"the state dict has {len(saved_groups)} parameter groups but this {name} has "
                f"{len(self.param_groups)}; build the optimizer with the same groups"
            )
        param_of: dict[Any, Tensor] = {}
        groups = []
        for number, (saved, group) in enumerate(zip(saved_groups, self.param_groups)):
            if not isinstance(saved, Mapping) or "params" not in saved:
                raise InvalidArgumentError(
                    f"parameter group {number} of the state dict has no 'params'"
                )
            indices = list(saved["params"])
            if len(indices) != len(group["params"]):
                raise InvalidArgumentError(
                    f"parameter group {number} of the state dict has {len(indices)} parameters "
                    f"but this {name}'s group {number} has {len(group['params'])}; build the "
                    "optimizer over the same parameters"
                )
            for index, param in zip(indices, group["params"]):
                if isinstance(index, bool) or not isinstance(index, int) or index in param_of:
                    raise InvalidArgumentError(
                        f"parameter group {number} of the state dict lists parameter {index!r}, "
                        "which is not a fresh integer index"
                    )
                param_of[index] = param
            # Options added to the optimizer after the dict was saved take their defaults.
            restored = {**self.defaults, **saved, "params": group["params"]}
            self._check_options(restored)
            groups.append(restored)
        group_of = {id(p): g for g in groups for p in g["params"]}
        state: defaultdict[Tensor, dict[str, Any]] = defaultdict(dict)
        for index, entry in saved_state.items():
            if index not in param_of:
                raise InvalidArgumentError(
                    f"the state dict has state for parameter {index!r}, which no parameter group "
                    "lists"
                )
            param = param_of[index]
            if not isinstance(entry, Mapping):
                raise ArgumentError(
                    f"the state of parameter {index} must be a dict, got {type(entry).__name__}"
                )
            entry = _numbers_as_numbers(_arrays_as_tensors(entry))
            self._check_state(param, entry, group_of[id(param)])
            state[param] = {
                key: _state_value_for(param, value, f"state {key!r} of parameter {index}")
                for key, value in entry.items()
            }
        self.param_groups = groups
        self.state = state
        for hook in self._optimizer_load_state_dict_post_hooks:
            hook(self)

    def _check_state(self, param: Tensor, state: Mapping[str, Any], group: dict[str, Any]) -> None:
        """Raise ``ValueError``/``TypeError`` if ``state`` cannot be used for ``param``."""

    # -- display -----------------------------------------------------------------------

    def __repr__(self) -> str:
        lines = [f"{type(self).__name__}("]
        for number, group in enumerate(self.param_groups):
            count = len(group["params"])
            options = ", ".join(f"{k}={v!r}" for k, v in group.items() if k != "params")
            lines.append(f"  group {number}: {count} param{'s' * (count != 1)}, {options}")
        lines.append(")")
        return "\n".join(lines)


#: The hook lists of an optimizer (see Optimizer._no_hooks).
_HOOK_LISTS = (
    "_optimizer_step_pre_hooks",
    "_optimizer_step_post_hooks",
    "_optimizer_state_dict_pre_hooks",
    "_optimizer_state_dict_post_hooks",
    "_optimizer_load_state_dict_pre_hooks",
    "_optimizer_load_state_dict_post_hooks",
)

# (a subclass's own step is wrapped by __init_subclass__)
Optimizer.step = with_step_hooks(Optimizer.__dict__["step"])  # type: ignore[method-assign]


def _stepping_complex_as_real(update: Callable[..., None]) -> Callable[..., None]:
    """``update`` (an ``_update_group``), stepping complex parameters as pairs of reals.

    A group with no complex parameter to step calls ``update`` itself; one with
    some runs :func:`_update_on_real_stand_ins`.
    """

    @functools.wraps(update)
    def update_group(self: Optimizer, group: dict[str, Any], numbers: list[float]) -> None:
        for param in group["params"]:
            # (is_complex inlined, a set lookup: this runs at every step of real parameters)
            if param._array.dtype in param._device.complex_natives and param._grad is not None:
                return _update_on_real_stand_ins(self, update, group, numbers)
        return update(self, group, numbers)

    update_group._steps_complex_as_real = True  # type: ignore[attr-defined]
    return update_group


def _update_on_real_stand_ins(
    optimizer: Optimizer,
    update: Callable[..., None],
    group: dict[str, Any],
    numbers: list[float],
) -> None:
    """Run ``update`` on ``group`` with each complex parameter that has a gradient replaced
    by a real stand-in, then write the results back into the complex tensors.

    The stand-ins hold :func:`~plugrad.optim.updates.real_pairs` of the
    parameter, of its gradient and of its complex state tensors (PyTorch's
    ``view_as_real`` views; plugrad's complex arrays have no real view), and
    sit in ``optimizer.state`` only while ``update`` runs. Afterwards each
    parameter and state tensor gets its new values in place (a backend whose
    arrays are immutable points it at a new array) and the parameter's version
    is bumped once, as a real parameter's is; a state tensor the update made
    is stored complex, as PyTorch's state is.
    """
    state = optimizer.state
    params, stand_ins = [], []
    for param in group["params"]:
        if param._grad is None or not is_complex(param):
            params.append(param)
            continue
        stand_in = _real_stand_in(param)
        stand_in._grad = _real_stand_in(param._grad)
        entry = state.get(param)
        if entry is not None:
            state[stand_in] = {
                key: _real_stand_in(value)
                if isinstance(value, Tensor) and is_complex(value)
                else value
                for key, value in entry.items()
            }
        params.append(stand_in)
        stand_ins.append((param, stand_in))
    try:
        update(optimizer, {**group, "params": params}, numbers)
    finally:
        stepped = [(param, stand_in, state.pop(stand_in, None)) for param, stand_in in stand_ins]
    for param, stand_in, real_entry in stepped:
        _write_pairs(param, stand_in)
        param._bump_version()
        if real_entry is None:
            continue
        entry = state[param]  # (made here if the update made the stand-in's)
        for key, value in real_entry.items():
            if not isinstance(value, Tensor) or value.shape != stand_in.shape:
                entry[key] = value
                continue
            old = entry.get(key)
            if isinstance(old, Tensor) and is_complex(old):
                _write_pairs(old, value)
            else:  # made by this step
                dtype = param._array.dtype
                pairs = complex_from_pairs(value._device.xp, value._array, dtype)
                entry[key] = state_tensor(param, pairs)


def _real_stand_in(tensor: Tensor) -> Tensor:
    """A real tensor of ``tensor``'s complex values as pairs, shape ``(..., 2)``."""
    return state_tensor(tensor, real_pairs(tensor._device.xp, tensor._array))


def _write_pairs(tensor: Tensor, pairs: Tensor) -> None:
    """Write the pairs of reals of ``pairs`` into the complex ``tensor``, in place where the
    backend can."""
    xp = tensor._device.xp
    array = tensor._array
    tensor._array = overwrite(xp, array, complex_from_pairs(xp, pairs._array, array.dtype))


def _refuse_unordered(params: Any, name: str) -> None:
    if isinstance(params, set | frozenset):
        raise ArgumentError(
            f"{name} needs the parameters in a fixed order (state dicts refer to them by "
            "position), but got a set; pass a list"
        )
    if isinstance(params, dict) and "params" in params:
        raise ArgumentError(
            f"{name} takes an iterable of parameter groups; wrap the single group in a list: "
            "[{'params': ...}]"
        )


def _is_named(item: Any) -> bool:
    """Whether ``item`` is a ``(name, tensor)`` pair, as ``named_parameters()`` yields."""
    return type(item) is tuple and len(item) == 2 and isinstance(item[0], str)


def _check_param(param: Any, index: int, name: str) -> None:
    if not isinstance(param, Tensor):
        raise ArgumentError(
            f"{name} can only optimize Tensors, but parameter {index} is a {type(param).__name__}"
        )
    if param._edge is not None:
        raise InvalidArgumentError(
            f"{name} can only optimize leaf tensors, but parameter {index} (shape {param.shape}) "
            f"was computed by {param.grad_fn!r}; optimize the tensors it was computed from, "
            "or make a leaf with x.detach().requires_grad_()"
        )
    if param.dtype.kind not in ("real floating", "complex floating"):  # (NumPy's cast error)
        raise DtypeError(
            f"{name} optimizes floating-point tensors, but parameter {index} is "
            f"{param.dtype.name}; convert it (x.float()) or leave it out"
        )


#: State entries plugrad keeps as Python numbers, where PyTorch keeps 0-d tensors.
_NUMBER_STATE = frozenset({"step", "mu_product", "eta", "mu"})


def _arrays_as_tensors(entry: Mapping[str, Any]) -> Mapping[str, Any]:
    """A saved state entry with other libraries' arrays (a PyTorch optimizer's state, a
    NumPy array), those in lists and tuples too (L-BFGS's histories), as plugrad Tensors,
    as :meth:`Module.load_state_dict` reads them."""
    if not any(_holds_foreign_array(v) for v in entry.values()):
        return entry
    return {k: _foreign_as_tensors(v) for k, v in entry.items()}


def _is_foreign_array(value: Any) -> bool:
    return not isinstance(value, Tensor) and hasattr(value, "shape") and hasattr(value, "dtype")


def _holds_foreign_array(value: Any) -> bool:
    if isinstance(value, list | tuple):
        return any(_holds_foreign_array(v) for v in value)
    return _is_foreign_array(value)


def _foreign_as_tensors(value: Any) -> Any:
    if isinstance(value, list):
        return [_foreign_as_tensors(v) for v in value]
    if isinstance(value, tuple):
        return tuple(_foreign_as_tensors(v) for v in value)
    return asarray(value) if _is_foreign_array(value) else value


def _numbers_as_numbers(entry: Mapping[str, Any]) -> Mapping[str, Any]:
    """A saved state entry with PyTorch's 0-d tensors of step counts and factors as numbers,
    so that a state dict saved by PyTorch (tensors converted) loads."""
    if not any(isinstance(entry.get(key), Tensor) for key in _NUMBER_STATE):
        return entry
    converted = dict(entry)
    for key in _NUMBER_STATE & converted.keys():
        value = converted[key]
        if isinstance(value, Tensor) and value.ndim == 0:
            number: Any = value.item()
            if key == "step" and float(number).is_integer():
                number = int(number)
            converted[key] = number
    return converted


def _state_value_for(param: Tensor, value: Any, what: str) -> Any:
    """A copy of one saved state value, as the optimizer of ``param`` uses it.

    Tensors, those in lists and tuples too, are copied onto the parameter's
    device in its dtype, as PyTorch casts every state tensor but the step
    count (the step counts, read as numbers before, are not tensors here). A
    state buffer is updated in place, so it must not alias the dict. A cast
    that would change values (an integer that the dtype rounds, a complex
    value into a real parameter) is refused with a
    :class:`~plugrad.errors.DtypeError` naming ``what``; floats are rounded.
    """
    if isinstance(value, list):
        return [_state_value_for(param, v, what) for v in value]
    if isinstance(value, tuple):
        return tuple(_state_value_for(param, v, what) for v in value)
    if not isinstance(value, Tensor):
        return value
    dtype = param.dtype
    if (
        value.dtype is not dtype
        and not _floating_into_floating(value.dtype.kind, dtype.kind)
        and not _casts_exactly(value, dtype)
    ):
        raise DtypeError(
            f"{what} is {value.dtype.name}, but the optimizer keeps it in its parameter's dtype "
            f"{dtype.name}, which would change its values; convert it (.to(dtype)) first, or "
            "load it into a parameter of a dtype that holds them"
        )
    device = param._device
    array = move_array(value._array, value._device, device)
    array = device.xp.astype(array, device.native_dtype(dtype), copy=True)
    return _wrap(array, device, False, None)


# -- parameter descriptions shared by the optimizers' docstrings --------------------------

#: The numpydoc entries of the parameters that several optimizers take with the same
#: meaning, for :func:`fill_parameter_docs`.
PARAMETER_DOCS = {
    "params": """\
params : iterable of Tensor, or iterable of dict
    Leaf tensors that require grad, or parameter groups (see :class:`Optimizer`).""",
    "weight_decay": """\
weight_decay : float, default 0
    L2 penalty added to the gradient.""",
    "foreach": """\
foreach : bool, optional
    Accepted for compatibility with PyTorch (its multi-tensor implementation);
    the update is the same.""",
    "maximize": """\
maximize : bool, default False
    Ascend the objective instead of descending.""",
    "differentiable": """\
differentiable : bool, default False
    Only ``False``: plugrad's steps cannot be differentiated through.""",
    "capturable": """\
capturable : bool, default False
    Accepted for compatibility with PyTorch (CUDA graphs); the update is the
    same, and :func:`plugrad.compile` captures the step either way.""",
    "fused": """\
fused : bool, optional
    Accepted for compatibility with PyTorch (its fused kernels); the update is
    the same.""",
}

# A docstring line that is only a name in braces: where fill_parameter_docs puts an entry.
_PLACEHOLDER = re.compile(r"^( *)\{(\w+)\}$", re.MULTILINE)

_Documented = TypeVar("_Documented", bound=type)


def fill_parameter_docs(cls: _Documented) -> _Documented:
    """Class decorator: put the entries of :data:`PARAMETER_DOCS` into ``cls``'s docstring.

    Each line of the docstring that is only ``{name}`` becomes the entry of
    ``name``, indented as that line is; other braces (those of LaTeX in
    ``.. math::`` blocks) are left alone. ``help()``, autodoc and doctests
    read the filled docstring. An unknown name raises ``KeyError`` on import.
    """

    def entry(match: re.Match[str]) -> str:
        indent, name = match.groups()
        return "\n".join(
            indent + line if line else line for line in PARAMETER_DOCS[name].split("\n")
        )

    if cls.__doc__:  # None under python -OO
        cls.__doc__ = _PLACEHOLDER.sub(entry, cls.__doc__)
    return cls


# -- options as a step reads them ---------------------------------------------------------


def plain_options(group: dict[str, Any]) -> dict[str, Any]:
    """``group`` with options given as 0-d tensors or NumPy numbers (a tensor ``lr``, as
    PyTorch takes) read as Python numbers, at each step; ``group`` itself where none is."""
    plain = _PLAIN_TYPES
    if all(
        type(v) in plain or (type(v) is tuple and all(type(e) in plain for e in v))
        for v in group.values()
    ):
        return group
    return {k: v if k == "params" else _plain_option_value(v) for k, v in group.items()}


_PLAIN_TYPES = frozenset({float, int, bool, str, list, type(None)})


def _plain_option_value(value: Any) -> Any:
    if isinstance(value, Tensor) or type(value).__module__ == "numpy":
        return value.item()
    if type(value) is tuple:
        return tuple(map(_plain_option_value, value))
    return value


def _plain_option(value: Any) -> bool:
    """Whether ``==`` on ``value`` gives a plain bool (numbers, strings, tuples of them)."""
    if value is None or type(value) in (bool, int, float, str):
        return True
    return type(value) is tuple and all(_plain_option(v) for v in value)


def _finite(value: Any) -> bool:
    """Whether ``repr(value)`` of a plain option is Python source for an equal value."""
    if type(value) is float:
        return math.isfinite(value)
    return type(value) is not tuple or all(_finite(v) for v in value)
