"""The exceptions plugrad raises.

Every error derives from :class:`PlugradError` *and* from the built-in
exception a user would naturally catch (``RuntimeError``, ``TypeError``,
``ValueError``), so ``except RuntimeError`` keeps working for code written
against PyTorch while ``except plugrad.errors.PlugradError`` catches ours only.
"""

from __future__ import annotations

__all__ = [
    "BackendError",
    "BackendUnavailableError",
    "BackwardError",
    "DeviceMismatchError",
    "DtypeError",
    "FunctionBackwardError",
    "GraphFreedError",
    "InPlaceError",
    "PluginLoadWarning",
    "PluginRegistrationError",
    "PlugradError",
    "ShapeError",
    "UnknownBackendError",
]


class PlugradError(Exception):
    """Base class of every error raised by plugrad itself."""


class BackwardError(PlugradError, RuntimeError):
    """``backward()`` was called in a way that cannot produce gradients."""


class GraphFreedError(BackwardError):
    """A backward pass reached a node whose saved values were already freed."""


class InPlaceError(PlugradError, RuntimeError):
    """An in-place change of a tensor was requested; plugrad tensors are not mutated."""


class FunctionBackwardError(PlugradError, RuntimeError):
    """A user :class:`~plugrad.Function` returned unusable gradients."""


class DtypeError(PlugradError, TypeError):
    """A dtype cannot be used where it was given."""


class ShapeError(PlugradError, ValueError):
    """A shape does not match what the operation requires."""


class DeviceMismatchError(PlugradError, RuntimeError):
    """One operation received tensors that live on different backends or devices."""


class BackendError(PlugradError, RuntimeError):
    """Base class for problems with a backend."""


class UnknownBackendError(BackendError, ValueError):
    """No backend with the requested name is registered."""


class BackendUnavailableError(BackendError):
    """The backend is registered but cannot run on this machine."""


class PluginRegistrationError(PlugradError, ValueError):
    """A plugin declared something malformed or clashing; it was rejected whole."""


class PluginLoadWarning(UserWarning):
    """A plugin failed to import or register; plugrad carries on without it."""
