"""Data of other libraries taken in by tensor(), asarray(), as_tensor() and from_dlpack():
torch's lazy negative and conjugate bits, bfloat16, tensors that require grad, another
byte order; and what a write to ``x.numpy()`` does on each backend."""

from __future__ import annotations

import numpy as np
import pytest

import plugrad
from plugrad import registry
from plugrad.errors import BackwardError, DtypeError
from plugrad.testing import backends_under_test

torch = pytest.importorskip("torch")

TAKERS = {
    "tensor": lambda data, device: plugrad.tensor(data, device=device),
    "asarray": lambda data, device: plugrad.asarray(data, device=device),
    "as_tensor": lambda data, device: plugrad.as_tensor(data, device=device),
    "from_dlpack": lambda data, device: plugrad.from_dlpack(data, device=device),
}


def _skip_unless_host_memory(taker: str, backend: str) -> None:
    """from_dlpack wraps memory where it is: CPU memory only on a backend of the CPU."""
    if taker == "from_dlpack" and not _on_the_host(backend):
        pytest.skip(f"{backend} does not hold CPU memory, which from_dlpack would wrap")


def _on_the_host(backend: str) -> bool:
    device = registry.resolve_device(backend)
    # (Dask names no DLPack device: its chunks are NumPy arrays)
    return device.backend.dlpack_device(device.native) in (None, (1, 0))


def _lazy_bit_tensors() -> dict[str, object]:
    negated = torch.tensor([1 + 2j, 3 - 4j]).conj().imag  # a view with the negative bit
    conjugated = torch.tensor([1 + 2j, 3 - 4j]).conj()  # a view with the conjugate bit
    assert negated.is_neg() and conjugated.is_conj()
    return {"negative bit": negated, "conjugate bit": conjugated}


@pytest.mark.parametrize("bit", ["negative bit", "conjugate bit"])
@pytest.mark.parametrize("taker", sorted(TAKERS))
@pytest.mark.parametrize("backend", backends_under_test())
def test_lazy_bits_of_torch_tensors_come_in_as_torch_reads_them(backend, taker, bit) -> None:
    _skip_unless_host_memory(taker, backend)
    data = _lazy_bit_tensors()[bit]
    t = TAKERS[taker](data, backend)
    # (torch's own from_dlpack of the negated view gives [2, -4]: its export drops the bit)
    assert t.tolist() == data.tolist()
    if t.device.backend.dlpack_device(t.device.native) == (1, 0):
        # Exported again, the values stay right (the tensor holds no lazy bit to drop).
        assert np.from_dlpack(t).tolist() == data.tolist()


@pytest.mark.parametrize("taker", sorted(TAKERS))
@pytest.mark.parametrize("backend", backends_under_test())
def test_bfloat16_is_refused_with_how_to_convert(backend, taker) -> None:
    _skip_unless_host_memory(taker, backend)
    if plugrad.bfloat16 in plugrad.device(backend).dtypes:
        pytest.skip(f"the {backend} backend stores bfloat16")
    data = torch.tensor([1.5], dtype=torch.bfloat16)
    with pytest.raises(DtypeError, match=r"torch and jax backends only.*x\.float\(\)|convert it"):
        TAKERS[taker](data, backend)


@pytest.mark.parametrize("backend", backends_under_test())
def test_bfloat16_with_a_dtype_converts_as_torch_tensor_does(backend) -> None:
    data = torch.tensor([1.5, -2.25], dtype=torch.bfloat16)
    expected = data.to(torch.float32)  # (torch.tensor(data, dtype=...) gives the same)
    t = plugrad.tensor(data, dtype=plugrad.float32, device=backend)
    assert t.dtype is plugrad.float32
    assert t.tolist() == expected.tolist()


@pytest.mark.parametrize("backend", backends_under_test())
def test_from_dlpack_of_a_torch_tensor_that_requires_grad_says_detach(backend) -> None:
    _skip_unless_host_memory("from_dlpack", backend)
    data = torch.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(BufferError):  # torch itself refuses to export it
        torch.from_dlpack(data)
    with pytest.raises(BackwardError, match=r"requires grad.*x\.detach\(\)"):
        plugrad.from_dlpack(data, device=backend)
    assert plugrad.from_dlpack(data.detach(), device=backend).tolist() == [1.0, 2.0]


@pytest.mark.parametrize("taker", ["tensor", "asarray", "as_tensor"])
@pytest.mark.parametrize("backend", backends_under_test())
def test_a_torch_tensor_that_requires_grad_comes_in_detached(backend, taker) -> None:
    data = torch.tensor([1.0, 2.0], requires_grad=True)
    t = TAKERS[taker](data, backend)
    assert t.tolist() == [1.0, 2.0]
    assert not t.requires_grad
    # The torch backend's array leaves torch's graph (its ops would record one otherwise).
    assert getattr(t._array, "requires_grad", False) is False
    assert data.grad is None and data.requires_grad


@pytest.mark.parametrize("backend", backends_under_test())
def test_from_dlpack_of_another_byte_order_is_a_dtype_error_as_tensor_gives(backend) -> None:
    _skip_unless_host_memory("from_dlpack", backend)
    swapped = np.arange(3, dtype=np.dtype(np.float64).newbyteorder())
    with pytest.raises(DtypeError):
        plugrad.tensor(swapped, device=backend)
    with pytest.raises(DtypeError, match=r"endian.*newbyteorder"):
        plugrad.from_dlpack(swapped, device=backend)
    converted = swapped.astype(swapped.dtype.newbyteorder("="))
    assert plugrad.from_dlpack(converted, device=backend).tolist() == [0.0, 1.0, 2.0]


@pytest.mark.parametrize("backend", backends_under_test())
def test_a_write_to_numpy_shows_in_the_tensor_or_raises(backend) -> None:
    # PyTorch's x.numpy() shares memory: a write shows in x. Where a backend cannot share
    # (JAX's immutable arrays, Dask's computed copy) the array is read-only, never a
    # writable copy whose writes are silently lost.
    expected = torch.tensor([1.0, 2.0])
    expected.numpy()[0] = 9.0
    t = plugrad.tensor([1.0, 2.0], device=backend)
    host = t.numpy()
    if not _on_the_host(backend):
        pytest.skip(f"{backend} does not hold CPU memory: numpy() is a copy, as x.cpu().numpy()")
    try:
        host[0] = 9.0
    except ValueError:  # read-only
        assert t.tolist() == [1.0, 2.0]
    else:
        assert t.tolist() == expected.tolist()
