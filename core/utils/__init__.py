"""Utilities around training: :mod:`plugrad.utils.data` (datasets, samplers, loaders)."""

from __future__ import annotations

from . import data

__all__ = ["data"]
