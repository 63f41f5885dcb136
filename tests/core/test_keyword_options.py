"""Shared keyword arguments are listed one by one in the run-time signatures."""

from __future__ import annotations

import inspect
from typing import TypedDict

import pytest

import plugrad
from plugrad.keyword_options import keyword_defaults, spell_out


def keyword_only(function):
    parameters = inspect.signature(function).parameters.values()
    assert not any(p.kind is p.VAR_KEYWORD for p in parameters)
    return {p.name: p.default for p in parameters if p.kind is p.KEYWORD_ONLY}


CREATION = {
    "dtype": None,
    "device": None,
    "backend": None,
    "requires_grad": False,
    "layout": None,  # PyTorch's, taken: tensors are strided (dense)
    "pin_memory": False,
}


@pytest.mark.parametrize(
    "function",
    [plugrad.tensor, plugrad.asarray, plugrad.zeros, plugrad.ones, plugrad.empty, plugrad.full,
     plugrad.zeros_like, plugrad.ones_like, plugrad.empty_like, plugrad.full_like,
     plugrad.arange, plugrad.linspace, plugrad.eye, plugrad.fft.fftfreq, plugrad.fft.rfftfreq,
     plugrad.randn_like, plugrad.rand_like],
    ids=lambda f: f.__name__,
)  # fmt: skip
def test_creation_functions_list_their_keywords(function):
    assert keyword_only(function).items() >= CREATION.items()


def test_sampling_adds_the_generator():
    for function in (plugrad.randn, plugrad.rand):
        # size= is PyTorch's keyword for the shape.
        assert keyword_only(function) == {
            "size": None, **CREATION, "generator": None, "out": None
        }  # fmt: skip


def test_layers_list_the_placement_of_their_parameters():
    placement = {"device": None, "dtype": None, "backend": None}
    for layer in (
        plugrad.nn.Linear,
        plugrad.nn.Conv2d,
        plugrad.nn.LayerNorm,
        plugrad.nn.BatchNorm1d,
    ):
        assert keyword_only(layer).items() >= placement.items()


def test_drawing_functions_show_the_defaults_of_draw():
    defaults = keyword_only(plugrad.viz.to_dot)
    assert defaults["show_values"] is False and defaults["max_elements"] == 8
    assert keyword_only(plugrad.viz.render) == defaults


def test_help_shows_the_keywords():
    text = str(inspect.signature(plugrad.zeros))
    assert "device" in text and "requires_grad" in text and "**" not in text


def test_signatures_stay_true_to_the_calls():
    """What the signature lists is what the function accepts, and nothing else."""
    x = plugrad.zeros(2, dtype=plugrad.float64, requires_grad=True)
    assert x.dtype == plugrad.float64 and x.requires_grad
    with pytest.raises(TypeError, match="unexpected keyword argument 'dtpye'"):
        plugrad.zeros(2, dtpye=plugrad.float64)


class _Options(TypedDict, total=False):
    size: int
    name: str


def test_spell_out_refuses_a_default_for_an_unknown_key():
    with pytest.raises(TypeError, match="colour"):
        spell_out(_Options, colour="red")


def test_spell_out_refuses_a_function_without_options():
    with pytest.raises(TypeError, match="no \\*\\*options"):
        spell_out(_Options)(lambda x: x)


def test_spell_out_and_keyword_defaults():
    @spell_out(_Options, size=3)
    def make(x, /, *, fast=False, **options):
        return options

    assert keyword_defaults(make) == {"fast": False, "size": 3, "name": None}
    assert make(1, name="a") == {"name": "a"}
