"""The op table of plugins/data_types.py (``astype``), and the dtype functions of the namespace."""

from __future__ import annotations

import numpy as np
import pytest

import plugrad
from plugrad.testing import OpCase, OpTests

P = plugrad

CASES = [
    OpCase(
        "astype",
        "astype-roundtrip",
        lambda a: P.astype(P.astype(a, P.float64) * 2.0, a.dtype),
        lambda a: (a.astype(np.float64) * 2.0).astype(a.dtype),
        ((2, 3),),
    ),
    OpCase(
        "astype",
        "astype-complex-and-back",
        lambda a: P.astype(P.real(P.astype(a, P.complex128) * (1 + 2j)), a.dtype),
        lambda a: np.real(a.astype(np.complex128) * (1 + 2j)).astype(a.dtype),
        ((3,),),
    ),
]

NO_GRAD = [
    OpCase(
        "astype",
        "astype-to-int",
        lambda a: P.astype(a, P.int32),
        lambda a: a.astype(np.int32),
        inputs=[np.array([1.5, -2.5])],
        differentiable=False,
    ),
]


class TestDataTypesOps(OpTests):
    cases = (*CASES, *NO_GRAD)


def test_astype_checks_its_dtype() -> None:
    with pytest.raises(plugrad.errors.DtypeError, match=r"plugrad\.float32"):
        P.astype(P.ones(2), "float32")
    assert P.astype(P.ones(2), P.float16).dtype == P.float16


def test_isdtype_result_type_can_cast_finfo_iinfo() -> None:
    assert P.isdtype(P.float32, "real floating") and P.isdtype(P.uint8, "integral")
    assert not P.isdtype(P.float32, ("integral", P.complex64))
    assert P.isdtype(P.complex64, "numeric") and P.isdtype(P.bool, P.bool)
    assert P.result_type(P.int8, P.uint8) == P.int16
    assert P.result_type(P.tensor([1.0]), P.float64) == P.float64
    assert P.result_type(P.float16, 1.0) == P.float16
    assert P.can_cast(P.int8, P.int64) and not P.can_cast(P.float64, P.int64)
    assert P.finfo(P.float64).eps == np.finfo(np.float64).eps
    assert isinstance(P.finfo(P.float32).max, float) and P.finfo(P.complex64).dtype == P.float32
    assert P.iinfo(P.int16) == (16, 32767, -32768, P.int16)
    with pytest.raises(plugrad.errors.DtypeError, match="iinfo"):
        P.finfo(P.int8)
    assert P.broadcast_shapes((2, 1), (3,)) == (2, 3)
    with pytest.raises(plugrad.errors.ShapeError, match="cannot be broadcast"):
        P.broadcast_shapes((2,), (3,))


def test_namespace_info_and_version() -> None:
    info = P.__array_namespace_info__()
    assert info.default_dtypes()["real floating"] == P.float32
    assert info.default_device() is P.ones(1).device
    assert set(info.dtypes(kind="real floating")) == {"float32", "float64"}
    assert info.capabilities()["boolean indexing"] is True
    assert P.ones(1).device in info.devices()
    assert P.__array_api_version__ == "2025.12"
    assert P.ones(1).__array_namespace__() is P
    with pytest.raises(ValueError, match=r"2025\.12"):
        P.ones(1).__array_namespace__(api_version="2019.01")
    assert (P.e, P.pi, P.newaxis) == (np.e, np.pi, None) and np.isnan(P.nan) and P.inf == np.inf
