"""Helpers over a model's parameters: gradient clipping, flattening to one vector,
calling a module with other tensors in their place (:mod:`.stateless`), tensors computed
from others at each access (:mod:`.parametrize`, :mod:`.parametrizations`, the older
:func:`weight_norm`); padding a batch of sequences of different lengths (:mod:`.rnn`);
folding a batch norm into the layer before it for inference (:mod:`.fusion`); zeroing
parts of parameters by masks (:mod:`.prune`); constructing a module without initialising
it (:func:`skip_init`)."""

from __future__ import annotations

from . import clip_grad, fusion, parametrizations, parametrize, prune, rnn, stateless
from .clip_grad import *  # noqa: F403
from .convert_parameters import parameters_to_vector, vector_to_parameters
from .fusion import *  # noqa: F403
from .init import skip_init
from .norm_hooks import remove_spectral_norm, remove_weight_norm, spectral_norm, weight_norm

__all__ = [
    *clip_grad.__all__,
    *fusion.__all__,
    "fusion",
    "parameters_to_vector",
    "parametrizations",
    "parametrize",
    "prune",
    "remove_spectral_norm",
    "remove_weight_norm",
    "rnn",
    "skip_init",
    "spectral_norm",
    "stateless",
    "vector_to_parameters",
    "weight_norm",
]
