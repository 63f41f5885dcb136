"""Asks every plugin's hooks and checks each answer before it goes into the tables.

A third-party plugin with an invalid answer is reported with a
:class:`~plugrad.errors.PluginLoadWarning` and recorded as failed; a built-in
plugin's, or one registered at run time, raises
:class:`~plugrad.errors.PluginRegistrationError`.
"""

from __future__ import annotations

import functools
import importlib.metadata
import inspect
import sys
import types
import weakref
from collections.abc import Callable, Iterable, Mapping
from typing import Any, TypeVar

import pluggy

from .backend import Backend
from .errors import PluginRegistrationError
from .kerneldef import (
    KernelDef,
    KernelSource,
    _meant_backend,
    _unregistered_backend,
    misspelled_backend,
)
from .opdef import OpDef, RegisteredOp, _adapt_kernel, register_op
from .plugin_manager import builtin_plugin_names, warn_about_plugin
from .plugin_tables import HOOKS, describe_owner
from .plugin_tables import state as _state
from .tensor import Tensor


@functools.cache
def _packages_distributions() -> dict[str, list[str]]:
    return dict(importlib.metadata.packages_distributions())


def distribution_of(plugin: object) -> tuple[str, str | None] | None:
    """The installed distribution a run-time plugin's module belongs to, if any."""
    module = plugin.__name__ if isinstance(plugin, types.ModuleType) else None
    module = module or getattr(plugin, "__module__", None) or type(plugin).__module__
    names = _packages_distributions().get(str(module).partition(".")[0])
    if not names:
        return None
    try:
        return names[0], importlib.metadata.version(names[0])
    except importlib.metadata.PackageNotFoundError:
        return names[0], None


def _hook_answers(
    manager: pluggy.PluginManager, hook_name: str, builtin: set[str]
) -> Iterable[tuple[pluggy.HookImpl, list[Any]]]:
    """Yield (hookimpl, list of answers) per plugin, in registration order.

    A third-party plugin whose hook raises is reported and skipped; a built-in
    one raising is a bug in plugrad and propagates; a ``strict`` one raising
    is a :class:`PluginRegistrationError` for the caller of ``register``.
    """
    for impl in getattr(manager.hook, hook_name).get_hookimpls():
        name = impl.plugin_name
        try:
            yield impl, list(impl.function() or ())
        except Exception as exc:
            message = f"{describe_owner(name)}: {hook_name}() raised {type(exc).__name__}: {exc}"
            if name in builtin_plugin_names():
                raise
            if name in builtin:
                raise PluginRegistrationError(message) from exc
            _state.failures[name] = message
            module = getattr(impl.function, "__module__", None)
            warn_about_plugin(f"{message} (plugin skipped)", error=exc, package=module)


def _plugin_contributions(
    manager: pluggy.PluginManager, hook_name: str, builtin: set[str]
) -> Iterable[tuple[str, list[Any]]]:
    """Yield (plugin name, list of answers) per plugin, in registration order."""
    for impl, answers in _hook_answers(manager, hook_name, builtin):
        yield impl.plugin_name, answers


def _reject(plugin: str, builtin: set[str], error: PluginRegistrationError) -> None:
    if plugin in builtin:
        raise error
    _state.failures[plugin] = str(error)
    manager = _state.manager
    plugin_object = manager.get_plugin(plugin) if manager is not None else None
    warn_about_plugin(f"{error} (plugin skipped)", plugin=plugin_object)


def check_hooks(manager: pluggy.PluginManager, builtin: set[str]) -> None:
    """Reject plugins that implement no plugrad hook, or a hook plugrad does not have."""
    for name, plugin in manager.list_name_plugin():
        if plugin is None or name in builtin_plugin_names():
            continue
        callers = manager.get_hookcallers(plugin) or []
        unknown = sorted(c.name for c in callers if c.spec is None)
        if unknown:
            message = (
                f"implements {', '.join(h + '()' for h in unknown)}, which plugrad does not "
                f"have; its hooks are {', '.join(h + '()' for h in HOOKS)} (check the spelling)"
            )
        elif not callers:
            message = (
                "has no function marked with @plugrad.hookspecs.hookimpl, so it contributes "
                f"nothing; mark its hooks with it ({', '.join(h + '()' for h in HOOKS)})"
            )
        else:
            continue
        _reject(name, builtin, PluginRegistrationError(f"{describe_owner(name)} {message}"))


_Collected = TypeVar("_Collected", Backend, RegisteredOp)


def _collect(
    manager: pluggy.PluginManager,
    builtin: set[str],
    hook: str,
    check: Callable[[str, Any, Callable[[str], None]], str],
    clash: Callable[[str, str, str], PluginRegistrationError],
    derive: Callable[[Any, str], _Collected] = lambda item, plugin: item,
) -> tuple[dict[str, _Collected], dict[str, str]]:
    """What every plugin's ``hook`` returns, by name, and the plugin of each name.

    ``check(plugin, item, claim)`` returns the item's name or raises
    PluginRegistrationError; ``claim(name)`` raises ``clash(plugin, name, owner)``
    where a plugin has the name already. ``derive(item, plugin)`` makes what is
    kept (the item itself by default). A plugin with one bad item contributes nothing.
    """
    found: dict[str, _Collected] = {}
    owners: dict[str, str] = {}
    for plugin, answers in _plugin_contributions(manager, hook, builtin):
        try:
            seen: set[str] = set()
            claim = functools.partial(_claim, found, owners, seen, plugin, clash)
            for item in answers:
                seen.add(check(plugin, item, claim))
            derived = [derive(item, plugin) for item in answers]
        except PluginRegistrationError as error:
            _reject(plugin, builtin, error)
            continue
        for item in derived:
            found[item.name] = item
            owners[item.name] = plugin
    return found, owners


def _claim(
    found: Mapping[str, Any],
    owners: Mapping[str, str],
    seen: set[str],
    plugin: str,
    clash: Callable[[str, str, str], PluginRegistrationError],
    name: str,
) -> None:
    """Raise ``clash`` if a plugin has ``name`` already: another one, or ``plugin`` itself
    twice."""
    if name in found or name in seen:
        raise clash(plugin, name, owners.get(name, plugin))


def _check_answer(plugin: str, hook: str, answer: Any, kind: type, expected: str) -> None:
    """Refuse an ``answer`` of ``hook`` that is not a ``kind``; ``expected`` says what is."""
    if not isinstance(answer, kind):
        raise PluginRegistrationError(
            f"{describe_owner(plugin)}: {hook}() returned a {type(answer).__name__}; "
            f"return {expected}"
        )


def _check_backend(plugin: str, backend: Any, claim: Callable[[str], None]) -> str:
    _check_answer(
        plugin, "plugrad_backends", backend, Backend, "instances of plugrad.backend.Backend"
    )
    if not isinstance(backend.name, str) or not backend.name.isidentifier():
        raise PluginRegistrationError(
            f"{describe_owner(plugin)}: backend name {backend.name!r} must be an identifier"
        )
    claim(backend.name)
    return backend.name


def _backend_clash(plugin: str, name: str, owner: str) -> PluginRegistrationError:
    return PluginRegistrationError(
        f"{describe_owner(plugin)}: backend {name!r} is already registered by "
        f"{describe_owner(owner)}; choose another name (or uninstall one of the two)"
    )


def collect_backends(
    manager: pluggy.PluginManager, builtin: set[str]
) -> tuple[dict[str, Backend], dict[str, str]]:
    return _collect(manager, builtin, "plugrad_backends", _check_backend, _backend_clash)


def _check_op(backends: tuple[str, ...], plugin: str, op: Any, claim: Callable[[str], None]) -> str:
    _check_answer(plugin, "plugrad_ops", op, OpDef, "ops made with plugrad.opdef.op(...)")
    claim(op.name)
    for backend in op.kernels:
        if not isinstance(backend, str) or not backend.isidentifier():
            meant = _meant_backend(backend, backends)
            raise PluginRegistrationError(
                f"{describe_owner(plugin)}, op {op.name!r}: kernels= maps backend names such "
                f"as 'numpy' to kernels, but it has the key {backend!r}"
                + (f"; did you mean {meant!r}?" if meant else "")
            )
        typo = misspelled_backend(backend, backends)
        if typo is not None:
            raise PluginRegistrationError(
                f"{describe_owner(plugin)}, op {op.name!r}: the kernel for backend {backend!r} "
                f"in kernels=: {_unregistered_backend(backend, typo)}"
            )
    if plugin not in builtin_plugin_names() and _is_plugrad_function(op.name):
        raise PluginRegistrationError(
            f"{describe_owner(plugin)}, op {op.name!r}: the name is taken by "
            f"plugrad.{op.name}, which backward rules reach as xp.{op.name}; "
            "choose another name"
        )
    return op.name


def collect_ops(
    manager: pluggy.PluginManager, builtin: set[str], backends: Iterable[str] = ()
) -> tuple[dict[str, RegisteredOp], dict[str, str]]:
    """Every plugin's ops, by name, and the plugin of each; ``backends`` are the
    registered backends' names, which the ops' ``kernels=`` may not misspell."""
    return _collect(
        manager,
        builtin,
        "plugrad_ops",
        functools.partial(_check_op, tuple(backends)),
        _name_clash,
        lambda op, plugin: _registered(op, describe_owner(plugin)),
    )


def collect_aliases(
    ops: dict[str, RegisteredOp], owners: dict[str, str], builtin: set[str]
) -> dict[str, str]:
    """Return alias -> op name for the further function names ops declare.

    Where a name is both a built-in alias and another plugin's op or alias, the other
    plugin is refused (never plugrad's own plugin, which would stop plugrad loading).
    """
    ours = set(builtin_plugin_names())
    aliases: dict[str, str] = {}
    for name, op in ops.items():
        for alias in op.aliases:
            if alias in ops:
                if owners[name] in ours and owners[alias] not in ours:
                    clash = _taken_by_builtin_alias(owners[alias], f"op {alias!r}", alias, name)
                    _reject(owners[alias], builtin, clash)
                    continue
                problem = f"it is the name of op {alias!r} of {describe_owner(owners[alias])}"
            elif alias in aliases:
                other = aliases[alias]
                if owners[name] in ours and owners[other] not in ours:
                    what = f"op {other!r}, alias {alias!r}"
                    _reject(
                        owners[other],
                        builtin,
                        _taken_by_builtin_alias(owners[other], what, alias, name),
                    )
                    aliases[alias] = name
                    continue
                problem = f"op {other!r} of {describe_owner(owners[other])} already declared it"
            elif _is_plugrad_function(alias):
                problem = f"plugrad.{alias} is one of plugrad's own functions"
            else:
                aliases[alias] = name
                continue
            _reject(
                owners[name],
                builtin,
                PluginRegistrationError(
                    f"{describe_owner(owners[name])}, op {name!r}: it declares the alias "
                    f"{alias!r}, but "
                    f"{problem}; remove the alias or choose another name"
                ),
            )
    return aliases


def _taken_by_builtin_alias(
    plugin: str, what: str, alias: str, builtin_op: str
) -> PluginRegistrationError:
    return PluginRegistrationError(
        f"{describe_owner(plugin)}, {what}: {alias!r} is plugrad's own name (plugrad.{alias}, "
        f"another name of the built-in op {builtin_op!r}) and cannot name a plugin's op or "
        "alias; choose another name"
    )


#: Each declaration's registered form, made once: rebuilding the tables reuses it.
_registered_forms: weakref.WeakKeyDictionary[OpDef, RegisteredOp] = weakref.WeakKeyDictionary()


def _registered(declaration: OpDef, owner: str) -> RegisteredOp:
    registered = _registered_forms.get(declaration)
    if registered is None:
        registered = _registered_forms[declaration] = register_op(declaration, owner)
    return registered


def _is_plugrad_function(name: str) -> bool:
    """Whether ``name`` is one of plugrad's own public names that is not an op."""
    value = vars(sys.modules["plugrad"]).get(name)
    return value is not None and not name.startswith("_") and not hasattr(value, "__op__")


def _name_clash(plugin: str, name: str, owner: str) -> PluginRegistrationError:
    if owner in builtin_plugin_names():
        return PluginRegistrationError(
            f"{describe_owner(plugin)}, op {name!r}: {name!r} is a built-in op of plugrad (from "
            f"{owner!r}) and cannot be declared again. Give the new op another name, or, to "
            f"compute {name!r} with your own kernel on a backend, return "
            f"plugrad.kerneldef.kernel({name!r}, backend=..., fn=...) from plugrad_kernels()"
        )
    return PluginRegistrationError(
        f"{describe_owner(plugin)}, op {name!r}: the name is already registered by "
        f"{describe_owner(owner)}; "
        "choose another name (or uninstall one of the two)"
    )


def collect_kernels(
    manager: pluggy.PluginManager,
    builtin: set[str],
    ops: dict[str, RegisteredOp],
    backends: Iterable[str] = (),
) -> dict[tuple[str, str], tuple[KernelSource, ...]]:
    """Validate every plugrad_kernels answer; order each (op, backend)'s kernels best first.

    ``backends`` are the registered backends' names, which a kernel may not misspell.
    """
    backends = tuple(backends)
    order = {name: index for index, (name, _) in enumerate(manager.list_name_plugin())}
    ranked: dict[tuple[str, str], list[tuple[tuple[int, int], KernelSource]]] = {}
    for impl, answers in _hook_answers(manager, "plugrad_kernels", builtin):
        plugin = impl.plugin_name
        mark = "tryfirst" if impl.tryfirst else "trylast" if impl.trylast else None
        rank = (2 if impl.tryfirst else 0 if impl.trylast else 1, order[plugin])
        dist, version = _state.distributions.get(plugin, (None, None))
        accepted: dict[tuple[str, str], KernelSource] = {}
        try:
            for declared in answers:
                _check_answer(
                    plugin,
                    "plugrad_kernels",
                    declared,
                    KernelDef,
                    "plugrad.kerneldef.kernel(...) declarations",
                )
                target = declared._validate(describe_owner(plugin), ops, backends)
                key = (target.name, declared.backend)
                if key in accepted:
                    raise PluginRegistrationError(
                        f"{describe_owner(plugin)}: two kernels for op {key[0]!r} on backend "
                        f"{key[1]!r}; return one"
                    )
                # Called like every kernel: kernel(xp, *arrays, **params).
                function = _adapt_kernel(declared.fn, target.input_names, target.param_names)
                accepted[key] = KernelSource(
                    *key, "override", plugin, function, dist, version, mark
                )
        except PluginRegistrationError as error:
            _reject(plugin, builtin, error)
            continue
        for key, source in accepted.items():
            ranked.setdefault(key, []).append((rank, source))
    return {
        key: tuple(source for _, source in sorted(entries, key=lambda e: e[0], reverse=True))
        for key, entries in ranked.items()
    }


def collect_plan_passes(
    manager: pluggy.PluginManager, builtin: set[str]
) -> tuple[tuple[str, Callable[[Any], Any]], ...]:
    """Validate every plugrad_plan_passes answer: callables of one argument."""
    found: list[tuple[str, Callable[[Any], Any]]] = []
    for impl, answers in _hook_answers(manager, "plugrad_plan_passes", builtin):
        plugin = impl.plugin_name
        try:
            for rewrite in answers:
                if not callable(rewrite) or not _takes_one_argument(rewrite):
                    raise PluginRegistrationError(
                        f"{describe_owner(plugin)}: plugrad_plan_passes() returned {rewrite!r}; "
                        "return "
                        "functions rewrite(plan) -> plan of one argument"
                    )
        except PluginRegistrationError as error:
            _reject(plugin, builtin, error)
            continue
        found.extend((plugin, rewrite) for rewrite in answers)
    return tuple(found)


def _takes_one_argument(function: Callable[..., Any]) -> bool:
    try:
        inspect.signature(function).bind(None)
    except TypeError:
        return False
    except ValueError:  # no signature to read (some builtins): trust it
        return True
    return True


def collect_methods(
    ops: dict[str, RegisteredOp], owners: dict[str, str], builtin: set[str]
) -> dict[str, str]:
    """Return Tensor method name -> op name for the methods ops declare."""
    methods: dict[str, str] = {}
    for name, op in ops.items():
        in_place = tuple(f"{method}_" for method in op.in_place_methods)
        for method in (*op.method_names, *in_place):
            plugin = owners[name]
            if method in methods:
                other = methods[method]
                problem = f"op {other!r} of {describe_owner(owners[other])} already claimed it"
            elif method not in _state.methods and hasattr(Tensor, method):
                problem = f"Tensor already has an attribute {method!r}"
            else:
                methods[method] = name
                continue
            _reject(
                plugin,
                builtin,
                PluginRegistrationError(
                    f"{describe_owner(plugin)}, op {name!r}: it asks to be the Tensor method "
                    f"{method!r}, "
                    f"but {problem}. Declare another method name, or leave the method out: "
                    f"plugrad.ops.{name}(x) always works"
                ),
            )
    return methods
