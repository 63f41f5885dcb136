"""The exceptions plugrad raises.

Every error derives from :class:`PlugradError` *and* from the built-in
exceptions a user would naturally catch, so ``except plugrad.errors.PlugradError``
catches ours only while code written for NumPy or the Array API standard
(``except ValueError`` around a shape, ``except TypeError`` around a dtype) and
code written against PyTorch (``except RuntimeError``, which PyTorch raises for
shapes, dtypes, invalid values and singular matrices alike) both keep working:
:class:`ShapeError`, :class:`DtypeError`, :class:`InvalidArgumentError`,
:class:`LinAlgError` and :class:`IndexOutOfRangeError` are ``RuntimeError`` too.

A bad argument is an :class:`ArgumentError` (a ``TypeError``) when its kind is wrong
and an :class:`InvalidArgumentError` (a ``ValueError``) when its value is, unless a
more precise class fits. Python's protocols keep their own exceptions, as PyTorch's
do: a missing attribute or key is an ``AttributeError`` or ``KeyError``, and what
plugrad does not implement is a ``NotImplementedError`` that says so.
"""

from __future__ import annotations

__all__ = [
    "AnomalyError",
    "ArgumentError",
    "AxisError",
    "BackendError",
    "BackendUnavailableError",
    "BackwardError",
    "CallOrderError",
    "CompileError",
    "CompileWarning",
    "ConvergenceError",
    "DataLoaderWorkerError",
    "DeviceGraphError",
    "DeviceMismatchError",
    "DistributedError",
    "DistributedTimeoutError",
    "DivisionByZeroError",
    "DtypeError",
    "FunctionBackwardError",
    "GradcheckError",
    "GraphBreakError",
    "GraphFreedError",
    "InPlaceModificationError",
    "IndependentInputError",
    "IndexDtypeError",
    "IndexOutOfRangeError",
    "InvalidArgumentError",
    "InvalidIndexError",
    "InvalidNameError",
    "LinAlgError",
    "MissingAttributeError",
    "MissingDependencyError",
    "MissingProgramError",
    "NotSupportedError",
    "PluginLoadWarning",
    "PluginOutputError",
    "PluginRegistrationError",
    "PlugradError",
    "ReadOnlyViewError",
    "ScalarRangeError",
    "SerializationError",
    "ShapeError",
    "StateDictError",
    "TensorNameError",
    "MissingStateError",
    "UninitializedParameterError",
    "UnknownBackendError",
    "UnknownOpError",
    "ViewCopyError",
]


class PlugradError(Exception):
    """Base class of every error raised by plugrad itself."""


class BackwardError(PlugradError, RuntimeError):
    """``backward()`` was called in a way that cannot produce gradients."""


class InPlaceModificationError(BackwardError):
    """A tensor saved for backward was modified in place before the backward pass."""


class GraphFreedError(BackwardError):
    """A backward pass reached a node whose saved values were already freed."""


class IndependentInputError(BackwardError):
    """``strict=True`` found a result that would be zeros only because of independence.

    Raised by the transforms of :mod:`plugrad.func` and
    :mod:`plugrad.autograd.functional` when an output does not depend on an
    input (or, for second derivatives, a gradient on an input), instead of
    returning zeros for it.
    """


class AnomalyError(PlugradError, RuntimeError):
    """Anomaly mode found a NaN or infinity in a gradient."""


class GradcheckError(PlugradError, RuntimeError):
    """:func:`plugrad.autograd.gradcheck` found gradients that disagree with finite differences."""


class FunctionBackwardError(PlugradError, RuntimeError):
    """A user :class:`~plugrad.Function` returned unusable gradients."""


class ArgumentError(PlugradError, TypeError):
    """A call's arguments contradict each other (e.g. both ``axis=`` and ``dim=``)."""


class DtypeError(PlugradError, TypeError, RuntimeError):
    """A dtype cannot be used where it was given.

    Among others: data of a dtype plugrad has none for (object, strings,
    ``longdouble``), refused when the tensor is created with the supported
    dtypes listed; a kernel refusing an input's dtype; a complex gradient
    passed to ``backward()`` for a real output.
    """


class ScalarRangeError(DtypeError, OverflowError):
    """A Python number does not fit the integer dtype of the tensor it meets (``uint8 + -1``).

    Where PyTorch wraps the number around, plugrad refuses it; the message says how
    to compute instead (convert the tensor to a dtype that holds the number).
    """


class InvalidArgumentError(PlugradError, ValueError, RuntimeError):
    """An argument has a value the function does not accept; the message lists what it accepts."""


class ShapeError(PlugradError, ValueError, RuntimeError):
    """A shape does not match what the operation requires.

    A backend's own shape error from a kernel arrives as one, naming the op,
    the input shapes and, inside a module, the layer.
    """


class LinAlgError(PlugradError, ValueError, RuntimeError):
    """A matrix is singular, or not positive definite, where the operation needs it to be.

    NumPy's ``LinAlgError`` (a ``ValueError``) and PyTorch's (a ``RuntimeError``)
    from a kernel arrive as one on every backend, naming the op. JAX raises
    none: there such matrices give ``inf`` or NaN, as ``jax.numpy.linalg`` does.
    """


#: The class names of the backends' own linear-algebra errors (NumPy's, CuPy's, PyTorch's), which
#: kernels and backward rules raise again as :class:`LinAlgError`.
BACKEND_LINALG_ERRORS = frozenset({"LinAlgError", "_LinAlgError"})


class AxisError(ShapeError, IndexError):
    """An axis (``dim``) lies outside the dimensions of the tensor.

    Both a :class:`ShapeError` and an ``IndexError``, as NumPy's ``AxisError``
    is both a ``ValueError`` and an ``IndexError`` (the Array API asks for an
    ``IndexError``), so code catching either keeps working.
    """


class CallOrderError(PlugradError, RuntimeError):
    """A method called out of the order its object needs (``GradScaler.step()`` twice
    before ``update()``); the message says which call comes first."""


class StateDictError(PlugradError, RuntimeError):
    """A state dict does not fit a module: missing or unexpected keys, other shapes or dtypes."""


class UninitializedParameterError(PlugradError, ValueError):
    """A lazy layer's parameter was used before a forward pass or a state dict gave it a shape."""


class DeviceMismatchError(PlugradError, RuntimeError):
    """One operation received tensors that live on different backends or devices."""


class BackendError(PlugradError, RuntimeError):
    """Base class for problems with a backend."""


class ViewCopyError(BackendError):
    """An in-place change would not reach memory that PyTorch would share: refused first.

    On JAX and Dask a view is a new array; plugrad brings index views
    (``x[1:3]``) and ``detach()``-ed tensors up to date after an in-place
    change, but cannot re-derive other views (``reshape``, ``transpose``, ...),
    so it refuses the change before making it. On every backend, the results
    of ``view_as_real``, ``view_as_complex``, ``x.conj()`` and ``x.mH`` of a
    complex tensor are copies where PyTorch's are views: changing one in place
    is refused too, and so is changing the tensor it was made from while it lives.
    """


class ReadOnlyViewError(PlugradError, RuntimeError):
    """An in-place change to a view whose memory its library will not write.

    A broadcast view (``x.expand(...)``, ``broadcast_to``) shows one element of
    its base in several places, and NumPy marks it read-only. Writing it would
    have to give up sharing its base's memory, so the change is refused before
    anything is changed; write into a copy (``x.expand(...).clone()``) instead.
    """


class UnknownBackendError(BackendError, ValueError):
    """No backend with the requested name is registered."""


class BackendUnavailableError(BackendError):
    """The backend is registered but cannot run on this machine."""


class PluginRegistrationError(PlugradError, ValueError):
    """A plugin declared something malformed or clashing; it was rejected whole."""


class PluginOutputError(PlugradError, RuntimeError):
    """A plugin's kernel or backward rule returned something unusable.

    Always checked: that a kernel returns arrays of its backend, and that a
    gradient fits its input. Checking mode checks kernel outputs further.
    """


class InvalidIndexError(PlugradError, IndexError):
    """An index that cannot index the tensor: two ellipses, more indices than dimensions,
    a mask of another shape than the axes it covers, an index tensor of a float dtype
    (:class:`IndexDtypeError`)."""


class IndexDtypeError(DtypeError, InvalidIndexError):
    """An index tensor whose dtype cannot index (``x[plugrad.tensor([0.0])]``).

    Both a :class:`DtypeError` and an ``IndexError``, as NumPy and PyTorch raise
    an ``IndexError`` there.
    """


class IndexOutOfRangeError(InvalidIndexError, RuntimeError):
    """An index or class target lies outside the range it indexes.

    Both an ``IndexError`` (NumPy's, the standard's and PyTorch's for ``x[10]``) and a
    ``RuntimeError`` (PyTorch's for ``gather``, ``scatter``, ``index_select``,
    ``narrow`` or ``kthvalue`` out of range), so code catching either keeps working.
    """


class MissingAttributeError(PlugradError, AttributeError):
    """An object lacks an attribute that a function was told to use: a module pruned by
    :mod:`plugrad.nn.utils.prune` under a name it has no parameter of (an ``AttributeError``,
    as PyTorch raises there)."""


class UnknownOpError(PlugradError, LookupError):
    """No op with the requested name is registered."""


class MissingDependencyError(PlugradError, ImportError):
    """An optional Python package that a feature needs is not installed; the message names it."""


class MissingProgramError(PlugradError, RuntimeError):
    """An external program that a feature needs (e.g. Graphviz's ``dot``) is not on ``PATH``."""


class SerializationError(PlugradError, ValueError):
    """Saved data cannot be written or read: a file for :func:`plugrad.load`, or a pickle.

    Also a malformed or too deeply nested header, and a path in a folder that
    does not exist (the message names the path asked for).
    """


class ConvergenceError(PlugradError, ArithmeticError):
    """An iterative computation (a series, a continued fraction) did not converge within its
    bound of terms: its result would be inaccurate, so none is returned."""


class NotSupportedError(PlugradError, NotImplementedError):
    """What PyTorch does that plugrad cannot: an enabled :class:`~plugrad.autocast`
    (plugrad casts nothing on its own), or assigning to an orthogonal weight whose map has
    no inverse (``matrix_exp`` or ``cayley`` without the trivialization). A
    ``NotImplementedError``, as PyTorch raises there."""


class TensorNameError(StateDictError, KeyError):
    """A name of a parameter or buffer a module does not have (or, ``strict``, one it has
    and was not given), as :func:`plugrad.func.functional_call` takes them: a
    ``RuntimeError`` as PyTorch's, and a ``KeyError`` for a name looked up and not found."""

    def __str__(self) -> str:
        # KeyError's own str() would print the message in quotes, as a key.
        return str(self.args[0]) if len(self.args) == 1 else super().__str__()


class MissingStateError(StateDictError, KeyError):
    """What resuming needs is not there: a key a saved state dict lacks (a GradScaler's
    ``scale``), or a parameter group's ``initial_lr`` that a scheduler made with
    ``last_epoch`` set reads. A ``KeyError``, as PyTorch raises there."""

    def __str__(self) -> str:
        # KeyError's own str() would print the message in quotes, as a key.
        return str(self.args[0]) if len(self.args) == 1 else super().__str__()


class InvalidNameError(PlugradError, KeyError):
    """A name a module cannot register a parameter, buffer or submodule under: empty,
    dotted, or that of an attribute it has already. A ``KeyError``, as PyTorch raises there."""

    def __str__(self) -> str:
        # KeyError's own str() would print the message in quotes, as a key.
        return str(self.args[0]) if len(self.args) == 1 else super().__str__()


class DataLoaderWorkerError(PlugradError, RuntimeError):
    """A DataLoader's worker process ended without sending the batch it was making, or
    did not send it within the loader's ``timeout``."""


class DivisionByZeroError(PlugradError, ZeroDivisionError, RuntimeError):
    """An integer division (``//``, ``%``, ``div(rounding_mode=...)``) by zero, which
    has no integer result; PyTorch raises a ``RuntimeError`` there."""


class DistributedError(PlugradError, RuntimeError):
    """A collective or the process group of :mod:`plugrad.distributed` was misused or failed."""


class DistributedTimeoutError(DistributedError, TimeoutError):
    """A collective did not complete within its timeout (another rank did not take part)."""


class CompileError(PlugradError, RuntimeError):
    """:func:`plugrad.compile` cannot capture or replay a function; the message says why."""


class GraphBreakError(CompileError):
    """A compiled function did something a plan cannot replay (``fullgraph=True`` raises this)."""


class DeviceGraphError(CompileError):
    """A backend could not record a plan as one device graph (a library call its graphs
    cannot hold); :func:`plugrad.compile` then replays the plan without one."""


class CompileWarning(UserWarning):
    """A compiled function falls back to eager execution; the message names the reason and line."""


class PluginLoadWarning(UserWarning):
    """A plugin failed to import or register; plugrad carries on without it."""


def name_the_call(error: BaseException, called: str) -> None:
    """Make ``error``'s message name ``called`` (``"clamp_"``), the function the user called,
    where it names an op that function is made of (``clip(): ...``): in front of it, as
    ``clamp_() (in clip()): ...``; the out-of-place form of ``called`` (``clamp(): ...``)
    is replaced by it, as is the out-of-place form in ``div() (in floor_divide()): ...``.
    For a wrapper to call as it re-raises: nothing on the success path.

    Examples
    --------
    >>> from plugrad.errors import ShapeError, name_the_call
    >>> error = ShapeError("clip(): the shapes (3,) and (2,) do not broadcast")
    >>> name_the_call(error, "clamp_")
    >>> str(error)
    'clamp_() (in clip()): the shapes (3,) and (2,) do not broadcast'
    """
    if len(error.args) != 1 or not isinstance(error.args[0], str):
        return
    message = error.args[0]
    named_out_of_place = f"{called.removesuffix('_')}() (in "
    if called.endswith("_") and message.startswith(named_out_of_place):
        # div_() (in floor_divide()): the in-place form of a function already named
        error.args = (f"{called}() (in {message.removeprefix(named_out_of_place)}",)
        return
    inner, parenthesis, rest = message.partition("(): ")
    if not parenthesis or not inner.replace(".", "").replace("_", "").isalnum():
        return  # (no op named first)
    if inner == called:
        return
    if inner == called.removesuffix("_"):
        error.args = (f"{called}(): {rest}",)
    else:
        error.args = (f"{called}() (in {inner}()): {rest}",)


def add_note(error: BaseException, note: str) -> None:
    """Add ``note`` to ``error``'s notes once (PEP 678), which Python 3.11+ prints under its
    message; on Python 3.10 the note is kept in ``__notes__`` only.

    Examples
    --------
    >>> from plugrad.errors import add_note
    >>> error = KeyError("x")
    >>> add_note(error, "raised by a plugin"); add_note(error, "raised by a plugin")
    >>> error.__notes__
    ['raised by a plugin']
    """
    notes = getattr(error, "__notes__", None)
    if notes is not None and note in notes:
        return
    if hasattr(error, "add_note"):
        error.add_note(note)
    elif notes is None:
        error.__notes__ = [note]  # type: ignore[attr-defined]
    else:
        notes.append(note)


def type_name(value: object) -> str:
    """The name of ``value``'s type for an error message, with its module unless builtin.

    Examples
    --------
    >>> from plugrad.errors import type_name
    >>> type_name(1.5), type_name(ValueError())
    ('float', 'ValueError')
    """
    kind = type(value)
    if kind.__module__ == "builtins":
        return kind.__qualname__
    return f"{kind.__module__}.{kind.__qualname__}"


def checked_bool(what: str, value: object) -> bool:
    """``value`` if it is a bool, else :class:`ArgumentError` naming ``what``: a flag given
    as ``"no"`` or ``1`` would otherwise be read by its truth value.

    Examples
    --------
    >>> from plugrad.errors import checked_bool
    >>> checked_bool("upper", True)
    True
    >>> checked_bool("upper", "no")
    Traceback (most recent call last):
    ...
    plugrad.errors.ArgumentError: upper must be True or False, got 'no'
    """
    if not isinstance(value, bool):
        raise ArgumentError(f"{what} must be True or False, got {value!r}")
    return value
