"""Helpers over a model's parameters: gradient clipping, flattening to one vector, and
calling a module with other tensors in their place (:mod:`.stateless`); padding a batch of
sequences of different lengths (:mod:`.rnn`)."""

from __future__ import annotations

from . import rnn, stateless
from .clip_grad import clip_grad_norm_, clip_grad_value_, clip_grads_with_norm_, get_total_norm
from .convert_parameters import parameters_to_vector, vector_to_parameters

__all__ = [
    "clip_grad_norm_",
    "clip_grad_value_",
    "clip_grads_with_norm_",
    "get_total_norm",
    "parameters_to_vector",
    "rnn",
    "stateless",
    "vector_to_parameters",
]
