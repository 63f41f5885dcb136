"""The op table of plugins/fft.py (OpTests runs every check on each row).

Transforms with complex outputs are checked through real functions of them
(``real(y) + 2 imag(y)``), and complex inputs are built from real ones.
"""

from __future__ import annotations

import numpy as np
import pytest

import plugrad
from plugrad.testing import OpCase, OpTests

P = plugrad
F = plugrad.fft


def real_view(p, y):
    return p.real(y) + 2.0 * p.imag(y)


def complex_from(p, a, b):
    return a + b * 1j


def c2c(name, n_kw, shapes):
    """A complex-to-complex transform of a complex input built from two real ones."""

    def program(a, b):
        return real_view(P, getattr(F, name)(complex_from(P, a, b), **n_kw))

    def reference(a, b):
        return real_view(np, getattr(np.fft, name)(complex_from(np, a, b), **n_kw))

    return program, reference, shapes


NORMS = ("backward", "ortho", "forward")
DUAL = {"backward": "forward", "ortho": "ortho", "forward": "backward"}

CASES = [
    *[
        OpCase("fft", f"fft-{norm}", *c2c("fft", {"norm": norm}, ((2, 5), (2, 5))))
        for norm in NORMS
    ],
    OpCase("fft", "fft-pad", *c2c("fft", {"n": 7, "axis": 0}, ((4, 2), (4, 2)))),
    OpCase(
        "fft",
        "fft-cut-real-input",
        lambda a: real_view(P, F.fft(a, n=3)),
        lambda a: real_view(np, np.fft.fft(a, n=3)),
        ((5,),),
    ),
    *[
        OpCase("ifft", f"ifft-{norm}", *c2c("ifft", {"norm": norm, "n": 4}, ((6,), (6,))))
        for norm in NORMS
    ],
    OpCase(
        "fftn",
        "fftn",
        *c2c("fftn", {"s": (3, 5), "axes": (0, 1), "norm": "ortho"}, ((2, 4), (2, 4))),
    ),
    OpCase("fftn", "fftn-axes", *c2c("fftn", {"axes": (0, 2)}, ((2, 2, 3), (2, 2, 3)))),
    OpCase("ifftn", "ifftn", *c2c("ifftn", {"s": (2, 3), "axes": (1, 0)}, ((3, 3), (3, 3)))),
    *[
        OpCase(
            "rfft",
            f"rfft-{norm}-{n}",
            lambda a, norm=norm, n=n: real_view(P, F.rfft(a, n=n, norm=norm)),
            lambda a, norm=norm, n=n: real_view(np, np.fft.rfft(a, n=n, norm=norm)),
            ((2, 6),),
        )
        for norm in NORMS
        for n in (None, 5, 8)
    ],
    *[
        OpCase(
            "irfft",
            f"irfft-{norm}-{n}",
            lambda a, b, norm=norm, n=n: F.irfft(complex_from(P, a, b), n=n, norm=norm),
            lambda a, b, norm=norm, n=n: np.fft.irfft(complex_from(np, a, b), n=n, norm=norm),
            ((4,), (4,)),
        )
        for norm in NORMS
        for n in (None, 5, 7, 4)
    ],
    OpCase(
        "rfftn",
        "rfftn",
        lambda a: real_view(P, F.rfftn(a, s=(3, 6))),
        lambda a: real_view(np, np.fft.rfftn(a, s=(3, 6), axes=(0, 1))),
        ((2, 5),),
    ),
    OpCase(
        "irfftn",
        "irfftn",
        lambda a, b: F.irfftn(complex_from(P, a, b), axes=(0, 1), norm="ortho"),
        lambda a, b: np.fft.irfftn(complex_from(np, a, b), axes=(0, 1), norm="ortho"),
        ((3, 4), (3, 4)),
    ),
    OpCase(  # -1 is the input's length (Dask's transform chunked its result wrongly for it)
        "irfftn",
        "irfftn-s-minus-one",
        lambda a, b: F.irfftn(complex_from(P, a, b), s=(-1, 5), axes=(1, 0)),
        lambda a, b: np.fft.irfftn(complex_from(np, a, b), s=(3, 5), axes=(1, 0)),
        ((4, 3), (4, 3)),
    ),
    OpCase(
        "irfftn",
        "irfftn-s-odd",
        lambda a, b: F.irfftn(complex_from(P, a, b), s=(2, 5)),
        lambda a, b: np.fft.irfftn(complex_from(np, a, b), s=(2, 5), axes=(0, 1)),
        ((3, 3), (3, 3)),
    ),
    *[
        OpCase(
            "hfft",
            f"hfft-{norm}",
            lambda a, b, norm=norm: F.hfft(complex_from(P, a, b), n=5, norm=norm),
            lambda a, b, norm=norm: np.fft.hfft(complex_from(np, a, b), n=5, norm=norm),
            ((4,), (4,)),
        )
        for norm in NORMS
    ],
    *[
        OpCase(
            "ihfft",
            f"ihfft-{norm}",
            lambda a, norm=norm: real_view(P, F.ihfft(a, norm=norm)),
            lambda a, norm=norm: real_view(np, np.fft.ihfft(a, norm=norm)),
            ((2, 5),),
        )
        for norm in NORMS
    ],
    *[
        OpCase(
            "hfftn",
            f"hfftn-{norm}",
            lambda a, b, norm=norm: F.hfftn(complex_from(P, a, b), s=(3, 6), norm=norm),
            # hfftn(x) = irfftn(conj(x)) with the dual normalization
            lambda a, b, norm=norm: np.fft.irfftn(
                np.conj(complex_from(np, a, b)), s=(3, 6), axes=(0, 1), norm=DUAL[norm]
            ),
            ((3, 4), (3, 4)),
        )
        for norm in NORMS
    ],
    OpCase(
        "hfftn",
        "hfft2-over-the-last-two-of-three",
        lambda a, b: F.hfft2(complex_from(P, a, b)),
        lambda a, b: np.fft.irfftn(np.conj(complex_from(np, a, b)), axes=(1, 2), norm="forward"),
        ((2, 3, 3), (2, 3, 3)),
    ),
    *[
        OpCase(
            "ihfftn",
            f"ihfftn-{norm}",
            lambda a, norm=norm: real_view(P, F.ihfftn(a, axes=(1, 0), norm=norm)),
            lambda a, norm=norm: real_view(
                np, np.conj(np.fft.rfftn(a, axes=(1, 0), norm=DUAL[norm]))
            ),
            ((3, 5),),
        )
        for norm in NORMS
    ],
    OpCase(
        "fftshift",
        "fftshift",
        lambda a: F.fftshift(a, axes=1),
        lambda a: np.fft.fftshift(a, axes=1),
        ((2, 5),),
    ),
    OpCase("ifftshift", "ifftshift", F.ifftshift, np.fft.ifftshift, ((3, 4),)),
]


class TestFftOps(OpTests):
    cases = CASES


@pytest.mark.parametrize(
    ("name", "options"),
    [
        ("hfftn", {}),
        ("hfftn", {"s": (4, 7), "dim": (2, 0)}),
        ("hfft2", {"norm": "ortho"}),
        ("ihfftn", {"norm": "forward"}),
        ("ihfft2", {"s": (3, 6)}),
    ],
)
def test_hermitian_n_dimensional_transforms_agree_with_pytorch(name: str, options: dict) -> None:
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(2)
    z = rng.normal(size=(3, 4, 5)) + 1j * rng.normal(size=(3, 4, 5))
    if name.startswith("ihfft"):
        z = z.real
    x = plugrad.asarray(z, requires_grad=True)
    t = torch.tensor(z, requires_grad=True)
    y, ty = getattr(F, name)(x, **options), getattr(torch.fft, name)(t, **options)
    np.testing.assert_allclose(y.detach().numpy(), ty.detach().numpy(), rtol=1e-10, atol=1e-12)
    w = rng.normal(size=tuple(y.shape))
    out, t_out = y * plugrad.asarray(w), ty * torch.tensor(w)
    plugrad.real(out * plugrad.conj(out)).sum().backward()
    (t_out * t_out.conj()).real.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy(), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("name", ["fft", "ifft", "rfft", "irfft", "hfft", "ihfft"])
def test_fft_gradients_agree_with_pytorch(name: str) -> None:
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(1)
    z = rng.normal(size=6) + 1j * rng.normal(size=6)
    if name in ("rfft", "ihfft"):
        z = z.real
    w = rng.normal(size=9)
    x = plugrad.asarray(z, requires_grad=True)
    y = getattr(F, name)(x, n=9 if name in ("irfft", "hfft") else None, norm="ortho")
    out = y * plugrad.asarray(w[: y.shape[0]])
    plugrad.real(out * plugrad.conj(out)).sum().backward()
    t = torch.tensor(z, requires_grad=True)
    ty = getattr(torch.fft, name)(t, n=9 if name in ("irfft", "hfft") else None, norm="ortho")
    t_out = ty * torch.tensor(w[: ty.shape[0]])
    (t_out * t_out.conj()).real.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy(), rtol=1e-10, atol=1e-12)


def test_frequencies() -> None:
    np.testing.assert_allclose(F.fftfreq(5, d=0.5).numpy(), np.fft.fftfreq(5, d=0.5))
    np.testing.assert_allclose(F.rfftfreq(6).numpy(), np.fft.rfftfreq(6))
    assert F.fftfreq(4).dtype == plugrad.float32
    assert F.rfftfreq(4, dtype=plugrad.float64).dtype == plugrad.float64
    assert isinstance(plugrad.fft.__dict__["fft"], type(F.ifft))


@pytest.mark.parametrize(
    "call",
    [
        lambda y: plugrad.fft.fft(y, dim=3),
        lambda y: plugrad.fft.rfft(y, dim=-3),
        lambda y: plugrad.fft.fftn(y, dim=(0, 5)),
        lambda y: plugrad.fft.fft2(y, dim=(0, 2)),
        lambda y: plugrad.fft.fftshift(y, dim=4),
        lambda y: plugrad.fft.ifftshift(y, dim=(0, 2)),
        lambda y: plugrad.fft.fft(y, axis=2),
        lambda y: plugrad.fft.ifftn(y, axes=(0, 3)),
    ],
)
def test_a_dim_out_of_range_is_an_axis_error_naming_the_transform(call) -> None:
    # It was the library's IndexError ("tuple index out of range"), naming no function.
    with pytest.raises(plugrad.errors.AxisError, match=r"fft\w*\(\): dim -?\d is out of range"):
        call(plugrad.ones(3, 4))


#: Every backend installed here: PyTorch's transforms are the ones that refused an empty batch.
_BACKENDS_HERE = [name for name in plugrad.backends.available() if name != "cupy"]


@pytest.mark.parametrize("backend", _BACKENDS_HERE)
@pytest.mark.parametrize(
    "call, error, words",
    [
        (lambda x: F.fft(x, norm="bad"), ValueError, "norm must be"),
        (lambda x: F.fft(x, n=0), ValueError, "n must be a positive length, got 0"),
        (lambda x: F.rfft(x, n=-1), ValueError, "n must be a positive length, got -1"),
        (lambda x: F.ifft(x, n=2.5), TypeError, "n must be an int"),
        (lambda x: F.fft(x[:, :0]), ValueError, "has 0 element"),
        (lambda x: F.irfft(x[:, :1]), ValueError, "has 1 element"),
        (lambda x: F.hfft(x[:, :1], n=-2), ValueError, "got -2"),
        (lambda x: F.irfftn(x[:, :1]), ValueError, "has 1 element"),
        (lambda x: F.fftn(x, s=(2,), axes=(0, 1)), ValueError, "one entry each"),
        (lambda x: F.fft2(x, s=(2, 0)), ValueError, "got 0"),
        (lambda x: plugrad.linalg.matrix_power(x[:, :2], 1.5), TypeError, "must be an int"),
    ],
    ids=["norm", "n 0", "n -1", "n float", "empty axis", "irfft of 1 term", "hfft n -2",
         "irfftn of 1 term", "s and axes", "s with 0", "matrix_power of a float"],
)  # fmt: skip
def test_a_bad_transform_argument_is_a_plugrad_error_on_every_backend(
    backend, call, error, words
) -> None:
    # It was the library's own error: NumPy's ValueError, PyTorch's RuntimeError.
    with plugrad.use_backend(backend):
        x = plugrad.ones(2, 4, requires_grad=True)
        with pytest.raises(error, match=words) as caught:
            call(x)
    assert isinstance(caught.value, plugrad.errors.PlugradError)
    assert x.grad is None and x.tolist() == [[1.0] * 4] * 2


@pytest.mark.parametrize("backend", _BACKENDS_HERE)
@pytest.mark.parametrize(
    "name, out_length",
    [("fft", 5), ("ifft", 5), ("rfft", 3), ("ihfft", 3), ("irfft", 8), ("hfft", 8),
     ("fftn", 5), ("rfftn", 3), ("irfftn", 8), ("hfftn", 8), ("ihfftn", 3)],
)  # fmt: skip
def test_an_empty_batch_transforms_to_an_empty_result_with_its_gradient(
    backend, name, out_length
) -> None:
    # PyTorch's transforms fail on an empty batch ("MKL FFT error"); NumPy's give the
    # empty result, as every backend now does.
    with plugrad.use_backend(backend):
        x = plugrad.zeros(0, 5, requires_grad=True)
        options = {"axes": (-1,)} if name.endswith("n") else {}
        y = getattr(F, name)(x, **options)
        assert tuple(y.shape) == (0, out_length)
        (y.real if y.dtype.kind == "complex floating" else y).sum().backward()
        assert tuple(x.grad.shape) == (0, 5)


@pytest.mark.parametrize("kind", ["fftfreq", "rfftfreq"])
def test_frequencies_in_an_integer_dtype_are_refused_as_pytorch_refuses_them(kind) -> None:
    # fftfreq(5, dtype=int64) gave [0, 0, 0, 0, 0]: the fractions truncated.
    function = getattr(plugrad.fft, kind)
    for dtype in (plugrad.int64, plugrad.int32, plugrad.uint8, plugrad.bool):
        with pytest.raises(
            plugrad.errors.DtypeError, match=f"floating or complex dtype, got {dtype.name}"
        ):
            function(5, 0.1, dtype=dtype)
    assert function(5, dtype=plugrad.float64).dtype == plugrad.float64
