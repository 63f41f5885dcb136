"""Utilities around training: :mod:`plugrad.utils.data` (datasets, samplers, loaders) and
:mod:`plugrad.utils.checkpoint` (activation checkpointing)."""

from __future__ import annotations

from . import checkpoint, data

__all__ = ["checkpoint", "data"]
