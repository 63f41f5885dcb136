"""``plugrad.jit``: PyTorch's ``torch.jit`` names, for code that scripts or traces its model;
everything runs eagerly.

:func:`script` and :func:`trace` compile nothing: they return what they are
given (a module stays that module, a function that function), which runs as
Python, with the same results and gradients as before. So a traced function's
branches follow each call's data, where PyTorch's trace replays those of the
example inputs. For a replayed plan of array calls use :func:`plugrad.compile`
(see :doc:`/compile`). The decorators (:func:`ignore`, :func:`unused`,
:func:`export`) return what they decorate, :func:`annotate` its value,
:func:`fork` runs the function at once and :func:`wait` gives its result.
:func:`save` and :func:`load` refuse: there is no TorchScript archive to write;
save the weights (``plugrad.save(model.state_dict(), path)``) instead.

As PyTorch's, :func:`script`, :func:`trace`, :func:`fork` and :func:`wait` warn
that they are deprecated (``DeprecationWarning``).

Examples
--------
>>> import warnings
>>> import plugrad
>>> model = plugrad.nn.Linear(2, 1)
>>> with warnings.catch_warnings():
...     warnings.simplefilter("ignore", DeprecationWarning)
...     scripted = plugrad.jit.script(model)
...     traced = plugrad.jit.trace(model, plugrad.ones(1, 2))
>>> scripted is model, traced is model
(True, True)
>>> plugrad.jit.is_scripting(), plugrad.jit.annotate(int, 3)
(False, 3)
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any, Final, Generic, TypeVar  # Final: PyTorch's torch.jit.Final is typing's

from .errors import ArgumentError, InvalidArgumentError, NotSupportedError, type_name
from .tensor import Tensor

__all__ = [
    "Final",
    "Future",
    "annotate",
    "export",
    "fork",
    "ignore",
    "is_scripting",
    "is_tracing",
    "load",
    "save",
    "script",
    "trace",
    "unused",
    "wait",
]

T = TypeVar("T")


def _deprecated(name: str) -> None:
    warnings.warn(
        f"plugrad.jit.{name}() is deprecated, as PyTorch's torch.jit.{name}: it runs "
        "eagerly here; use plugrad.compile for a replayed plan",
        DeprecationWarning,
        stacklevel=3,
    )


def _optimize_ignored(optimize: object) -> None:
    if optimize is not None:
        warnings.warn(
            "plugrad.jit: optimize= is deprecated and has no effect, as in PyTorch",
            FutureWarning,
            stacklevel=3,
        )


def script(
    obj: Any,
    optimize: None = None,
    _frames_up: int = 0,
    _rcb: Any = None,
    example_inputs: Any = None,
) -> Any:
    """PyTorch's ``torch.jit.script(obj)``: ``obj`` itself, which runs eagerly (a module, a
    class or a function).

    Warns ``DeprecationWarning``, as PyTorch's. ``example_inputs`` are taken and not
    used.

    Raises
    ------
    ArgumentError
        ``obj`` is neither a module nor callable.

    Examples
    --------
    >>> import warnings
    >>> import plugrad
    >>> def double(x):
    ...     return x * 2
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore", DeprecationWarning)
    ...     plugrad.jit.script(double) is double
    True
    """
    _deprecated("script")
    _optimize_ignored(optimize)
    if not callable(obj):  # (a module is)
        raise ArgumentError(
            f"plugrad.jit.script() takes a module, a class or a function, got {type_name(obj)}"
        )
    return obj


def trace(
    func: Any,
    example_inputs: Any = None,
    optimize: None = None,
    check_trace: bool = True,
    check_inputs: Any = None,
    check_tolerance: float = 1e-5,
    strict: bool = True,
    *,
    example_kwarg_inputs: dict[str, Any] | None = None,
) -> Any:
    """PyTorch's ``torch.jit.trace(func, example_inputs)``: ``func`` itself, which runs
    eagerly (a module or a function).

    The example inputs are checked as PyTorch's checks them (one is needed, made of
    tensors) and not run: the function's branches follow each call's data.
    ``check_trace``, ``check_inputs``, ``check_tolerance`` and ``strict`` change
    nothing. Warns ``DeprecationWarning``, as PyTorch's.

    Parameters
    ----------
    func : Module or callable
        What would be traced.
    example_inputs : Tensor, or tuple, list or dict of tensors
        The example arguments (a tensor is one argument).
    example_kwarg_inputs : dict of str to Tensor, optional
        The example keyword arguments, instead of ``example_inputs`` (keyword-only: the
        arguments PyTorch's takes between them are private).

    Raises
    ------
    ArgumentError
        ``func`` is not callable, no example is given, or an example is not a tensor or a
        tuple, list or dict.
    InvalidArgumentError
        An example holds something other than tensors (and lists, tuples and dicts of
        them), which PyTorch's trace refuses.

    Examples
    --------
    >>> import warnings
    >>> import plugrad
    >>> model = plugrad.nn.Linear(2, 1)
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     traced = plugrad.jit.trace(model, (plugrad.ones(1, 2),))
    >>> traced is model, caught[0].category.__name__
    (True, 'DeprecationWarning')
    """
    _deprecated("trace")
    _optimize_ignored(optimize)
    if not callable(func):
        raise ArgumentError(
            f"plugrad.jit.trace() traces a module or a function, got {type_name(func)}"
        )
    if example_inputs is None and example_kwarg_inputs is None:
        raise ArgumentError(
            "plugrad.jit.trace() needs example_inputs (a tensor or a tuple of tensors) or "
            "example_kwarg_inputs (a dict of them)"
        )
    if example_inputs is not None:
        if not isinstance(example_inputs, (Tensor, tuple, list, dict)):
            raise ArgumentError(
                "plugrad.jit.trace(): example_inputs must be a tensor or a tuple of tensors, "
                f"got {type_name(example_inputs)}"
            )
        _check_traceable("example_inputs", example_inputs)
    if example_kwarg_inputs is not None:
        if not isinstance(example_kwarg_inputs, dict):
            raise ArgumentError(
                "plugrad.jit.trace(): example_kwarg_inputs must be a dict of argument names "
                f"to tensors, got {type_name(example_kwarg_inputs)}"
            )
        _check_traceable("example_kwarg_inputs", example_kwarg_inputs)
    return func


def _check_traceable(what: str, value: Any) -> None:
    """Refuse what PyTorch's trace refuses: anything but tensors, in nested lists, tuples
    and dicts."""
    if isinstance(value, Tensor):
        return
    if isinstance(value, dict):
        items = list(value.values())
    elif isinstance(value, (tuple, list)):
        items = list(value)
    else:
        raise InvalidArgumentError(
            f"plugrad.jit.trace(): {what} holds a {type_name(value)}, which cannot be traced "
            "(PyTorch's traces tensors, in lists, tuples and dicts, only); pass it some "
            "other way (a module attribute, a default argument)"
        )
    for item in items:
        _check_traceable(what, item)


def ignore(drop: Any = False, **kwargs: Any) -> Any:
    """PyTorch's ``@torch.jit.ignore`` (bare or ``ignore(drop=...)``): the function as it is.

    ``drop=True`` (and the older ``drop_on_export=True``) warns ``FutureWarning``, as
    PyTorch's, which points to :func:`unused`.

    Examples
    --------
    >>> import plugrad
    >>> @plugrad.jit.ignore
    ... def debug(x):
    ...     return x
    >>> debug(3)
    3
    """
    if callable(drop):
        return drop
    if not isinstance(drop, bool):
        raise ArgumentError(f"plugrad.jit.ignore takes a function or drop=True/False, got {drop!r}")
    if kwargs.pop("drop_on_export", None) or drop:
        warnings.warn(
            "plugrad.jit.ignore(drop=True) is deprecated, as PyTorch's: use "
            "plugrad.jit.unused (both leave the function as it is here)",
            FutureWarning,
            stacklevel=2,
        )
    return _identity


def _identity(function: T) -> T:
    return function


def unused(fn: T) -> T:
    """PyTorch's ``@torch.jit.unused`` (on a function, a method or a property): as it is.

    Examples
    --------
    >>> import plugrad
    >>> plugrad.jit.unused(abs)(-1)
    1
    """
    return fn


def export(fn: T) -> T:
    """PyTorch's ``@torch.jit.export`` (a method a scripted module keeps): as it is."""
    return fn


def is_scripting() -> bool:
    """Whether the code is being compiled by TorchScript: never.

    Examples
    --------
    >>> import plugrad
    >>> plugrad.jit.is_scripting(), plugrad.jit.is_tracing()
    (False, False)
    """
    return False


def is_tracing() -> bool:
    """Whether the code is being traced by ``torch.jit.trace``: never."""
    return False


def annotate(the_type: Any, the_value: T) -> T:
    """PyTorch's ``torch.jit.annotate(type, value)``, a type hint for TorchScript:
    ``the_value``.

    Examples
    --------
    >>> import plugrad
    >>> plugrad.jit.annotate(list[int], [])
    []
    """
    return the_value


class Future(Generic[T]):
    """The result of :func:`fork`, computed already (PyTorch's ``torch.jit.Future``)."""

    def __init__(self, value: T) -> None:
        self._value = value

    def done(self) -> bool:
        """Whether the result is ready: always."""
        return True

    def wait(self) -> T:
        """The result."""
        return self._value

    def value(self) -> T:
        """The result."""
        return self._value


def fork(func: Callable[..., T], *args: Any, **kwargs: Any) -> Future[T]:
    """PyTorch's ``torch.jit.fork(func, *args, **kwargs)``: ``func(*args, **kwargs)``,
    run now (as PyTorch's runs it outside TorchScript), in a :class:`Future` for
    :func:`wait`. Warns ``DeprecationWarning``, as PyTorch's.

    Examples
    --------
    >>> import warnings
    >>> import plugrad
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore", DeprecationWarning)
    ...     plugrad.jit.wait(plugrad.jit.fork(pow, 2, 3))
    8
    """
    _deprecated("fork")
    if not callable(func):
        raise ArgumentError(f"plugrad.jit.fork() runs a function, got {type_name(func)}")
    return Future(func(*args, **kwargs))


def wait(future: Future[T]) -> T:
    """The result of a :func:`fork`. Warns ``DeprecationWarning``, as PyTorch's."""
    _deprecated("wait")
    if not isinstance(future, Future):
        raise ArgumentError(
            f"plugrad.jit.wait() takes what plugrad.jit.fork() returned, got {type_name(future)}"
        )
    return future.wait()


def save(m: Any, f: Any, _extra_files: Any = None) -> None:
    """Refused: plugrad writes no TorchScript archive (:class:`~plugrad.errors.NotSupportedError`).

    Save the weights with ``plugrad.save(model.state_dict(), path)`` and load them into
    a model built by its code (``model.load_state_dict(plugrad.load(path))``).

    Examples
    --------
    >>> import plugrad
    >>> plugrad.jit.save(plugrad.nn.Linear(2, 1), "model.pt")
    Traceback (most recent call last):
    ...
    plugrad.errors.NotSupportedError: plugrad.jit.save(): ...
    """
    raise NotSupportedError(
        "plugrad.jit.save(): plugrad compiles nothing, so there is no TorchScript program "
        "to save; save the weights with plugrad.save(model.state_dict(), path) and load them "
        "into the model built by its code: model.load_state_dict(plugrad.load(path))"
    )


def load(f: Any, map_location: Any = None, _extra_files: Any = None) -> Any:
    """Refused: plugrad reads no TorchScript archive (:class:`~plugrad.errors.NotSupportedError`).

    Build the model with its code and load its weights, saved with :func:`plugrad.save`:
    ``model.load_state_dict(plugrad.load(path))``.
    """
    raise NotSupportedError(
        "plugrad.jit.load(): plugrad reads no TorchScript program; build the model with its "
        "code and load weights saved with plugrad.save(model.state_dict(), path): "
        "model.load_state_dict(plugrad.load(path))"
    )
