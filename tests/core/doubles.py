"""Stand-ins for plugins that the core tests share."""

from __future__ import annotations

from plugrad.backend import Backend


class UnavailableBackend(Backend):
    """A backend whose library is not installed: it says so, and fails the test if plugrad
    imports its library, asks it for devices or asks it for kernels anyway."""

    def __init__(self, name: str, library: str) -> None:
        self.name = name
        self.library = library

    def unavailable_reason(self) -> str:
        return f"{self.library} is not installed; pip install {self.library}"

    def namespace(self):
        raise AssertionError(f"{self.name}: an unavailable backend's library must not be imported")

    def devices(self):
        raise AssertionError(f"{self.name}: an unavailable backend must not be asked for devices")

    def kernels(self):
        raise AssertionError(f"{self.name}: an unavailable backend must not be asked for kernels")
