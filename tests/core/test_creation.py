"""Creation functions, default dtypes and seedable random numbers."""

from __future__ import annotations

import math

import numpy as np
import pytest

import plugrad
from plugrad.errors import (
    ArgumentError,
    BackwardError,
    DtypeError,
    InvalidArgumentError,
    ScalarRangeError,
    UnknownBackendError,
)


@pytest.mark.parametrize(
    ("data", "dtype"),
    [
        (1.0, plugrad.float32),
        ([1.0, 2.0], plugrad.float32),
        ([1, 2.5], plugrad.float32),
        (3, plugrad.int64),
        ([[1, 2]], plugrad.int64),
        (True, plugrad.bool),
        ([1j], plugrad.complex64),
        (np.array([1.0]), plugrad.float64),
        (np.array([1], dtype=np.int32), plugrad.int32),
        (np.float64(1.0), plugrad.float64),
    ],
)
def test_tensor_infers_pytorch_default_dtypes(data, dtype) -> None:
    assert plugrad.tensor(data).dtype == dtype


def test_tensor_copies_and_asarray_shares(on_numpy) -> None:  # shares host memory
    a = np.array([1.0, 2.0])
    t = plugrad.tensor(a)
    s = plugrad.asarray(a)
    a[0] = 9.0
    assert t.tolist() == [1.0, 2.0] and s.tolist() == [9.0, 2.0]
    assert plugrad.tensor(s, dtype=plugrad.float32).dtype == plugrad.float32
    assert plugrad.asarray(a, copy=True).array is not a


def test_asarray_of_a_tensor() -> None:
    x = plugrad.tensor([1.0, 2.0], requires_grad=True)
    y = x * 2
    assert plugrad.asarray(y) is y
    assert plugrad.asarray(y.detach(), dtype=plugrad.float64).dtype == plugrad.float64
    with pytest.raises(ValueError, match="copy=False"):
        plugrad.asarray(y, dtype=plugrad.float64, copy=False)


@pytest.mark.parametrize(
    ("options", "dtype"),
    [
        ({"dtype": plugrad.float64}, plugrad.float64),
        ({"copy": True}, plugrad.float32),
        ({"device": "numpy", "copy": True}, plugrad.float32),
        ({"dtype": plugrad.float64, "device": "numpy"}, plugrad.float64),
    ],
)
def test_asarray_converts_a_tensor_that_requires_grad_in_the_graph(options, dtype) -> None:
    # What Array API code calls on every input: it must not cut the graph.
    x = plugrad.tensor([1.0, -2.0], requires_grad=True)
    y = plugrad.asarray(x * 3, **options)
    assert y.dtype == dtype and y.requires_grad
    if options.get("copy"):
        assert y is not x and not np.shares_memory(y.detach().numpy(), x.detach().numpy())
    (y * y).sum().backward()
    assert x.grad.tolist() == [18.0, -36.0]


def test_numpy_of_a_tensor_that_requires_grad_is_refused() -> None:
    x = plugrad.tensor([1.0, 2.0], requires_grad=True)
    for convert in (lambda t: t.numpy(), np.asarray, np.array):
        with pytest.raises(BackwardError, match=r"x\.detach\(\)\.numpy\(\)"):
            convert(x * 2)
    # What needs no gradient keeps working.
    assert (x * 2).detach().numpy().tolist() == [2.0, 4.0]
    assert (x * 2).tolist() == [2.0, 4.0] and (x * 2)[0].item() == 2.0
    assert "grad_fn" in repr(x * 2) and "2." in str(x * 2)
    with plugrad.no_grad():
        assert np.asarray(x * 2).tolist() == [2.0, 4.0]
    c = plugrad.tensor([1.0])
    with pytest.raises(BackwardError, match="requires_grad_"):
        plugrad.asarray(c, requires_grad=True)


def test_filled_constructors() -> None:
    assert plugrad.zeros((2, 3)).tolist() == [[0.0] * 3] * 2
    assert plugrad.ones(3).dtype == plugrad.float32
    assert plugrad.ones(3, dtype=plugrad.int32).dtype == plugrad.int32
    assert plugrad.empty((4,)).shape == (4,)
    assert plugrad.full((2,), 7).dtype == plugrad.int64
    assert plugrad.full((2,), 7.5).tolist() == [7.5, 7.5]
    assert plugrad.full((1,), True).dtype == plugrad.bool
    with pytest.raises(TypeError, match="one number as fill_value"):
        plugrad.full((1,), "a")
    with pytest.raises(ValueError, match="negative"):
        plugrad.zeros((-1,))
    # A float in a shape tuple was truncated: ones((2.5,)) had shape (2,) (PyTorch refuses).
    for make in (plugrad.ones, plugrad.zeros, plugrad.empty, lambda s: plugrad.full(s, 1.0)):
        with pytest.raises(TypeError, match="tuple of ints"):
            make((2.5,))
        with pytest.raises(TypeError, match="tuple of ints"):
            make((2, 3.0))
    assert plugrad.zeros((np.int64(2), plugrad.tensor(3))).shape == (2, 3)
    x = plugrad.zeros((2,), requires_grad=True)
    assert x.requires_grad and x.is_leaf


def test_like_constructors_follow_their_argument() -> None:
    x = plugrad.tensor([[1.0, 2.0]], dtype=plugrad.float64)
    for like in (plugrad.zeros_like, plugrad.ones_like, plugrad.empty_like):
        y = like(x)
        assert y.shape == (1, 2) and y.dtype == plugrad.float64
    assert plugrad.full_like(x, 3.0).tolist() == [[3.0, 3.0]]
    assert plugrad.zeros_like(x, dtype=plugrad.int8).dtype == plugrad.int8
    with pytest.raises(TypeError, match="Tensor"):
        plugrad.zeros_like(np.ones(2))


def test_arange() -> None:
    assert plugrad.arange(3).tolist() == [0, 1, 2] and plugrad.arange(3).dtype == plugrad.int64
    assert plugrad.arange(1, 7, 2).tolist() == [1, 3, 5]
    r = plugrad.arange(0.0, 1.0, 0.5)
    assert r.dtype == plugrad.float32 and r.tolist() == [0.0, 0.5]


@pytest.mark.parametrize("backend", plugrad.testing.backends_under_test())
@pytest.mark.parametrize(
    ("start", "stop", "step"),
    [(-0.5, 0.5, 0.1), (1, 1.3, 0.1), (5.0, 0, -0.7), (-1, 1, 0.2), (0, 10, 0.3), (0, 1, 0.25)],
)
def test_float_arange_is_start_plus_i_steps_rounded_once(start, stop, step, backend) -> None:
    # NumPy steps from (start + step) - start: arange(-0.5, 0.5, 0.1)[5] was -1.1e-16 and
    # arange(1, 1.3, 0.1)[2] 1.2000000000000002 (PyTorch: 1.2).
    expected = [start + i * step for i in range(math.ceil((stop - start) / step))]
    with plugrad.use_backend(backend):
        for dtype, cast in ((plugrad.float64, float), (plugrad.float32, np.float32),
                            (plugrad.float16, np.float16)):  # fmt: skip
            if dtype not in plugrad.get_default_device().dtypes:
                continue  # (array-api-strict has no float16)
            values = plugrad.arange(start, stop, step, dtype=dtype).tolist()
            assert values == [float(cast(v)) for v in expected]


def test_unknown_device_and_bad_dtype() -> None:
    with pytest.raises(UnknownBackendError, match=r"registered backends: .*numpy"):
        plugrad.zeros(2, device="nonexistent")
    with pytest.raises(UnknownBackendError, match="no device"):
        plugrad.zeros(2, device="numpy:3")
    with pytest.raises(DtypeError, match="plugrad dtype"):
        plugrad.zeros(2, dtype="float32")


def test_a_dtype_named_where_a_device_goes_says_what_to_pass() -> None:
    x = plugrad.ones(2)
    with pytest.raises(
        UnknownBackendError, match=r"'float64' names a dtype: pass plugrad\.float64"
    ):
        x.to("float64")
    with pytest.raises(UnknownBackendError, match=r"'bfloat16' names a dtype: pass plugrad\.bf"):
        x.to("bfloat16")
    assert x.dtype == plugrad.float32


def test_random_generators_are_seedable() -> None:
    a = plugrad.randn(2, 3, generator=plugrad.Generator(seed=0))
    b = plugrad.randn((2, 3), generator=plugrad.Generator(seed=0))
    c = plugrad.randn(2, 3, generator=plugrad.Generator(seed=1))
    assert a.shape == (2, 3) and a.dtype == plugrad.float32
    assert a.tolist() == b.tolist() and a.tolist() != c.tolist()
    plugrad.manual_seed(5)
    first = plugrad.rand(4, dtype=plugrad.float64)
    plugrad.manual_seed(5)
    assert plugrad.rand(4, dtype=plugrad.float64).tolist() == first.tolist()
    assert first.dtype == plugrad.float64
    u = plugrad.rand(10_000)
    assert 0.0 <= u.numpy().min() and u.numpy().max() < 1.0
    assert abs(float(u.numpy().mean()) - 0.5) < 0.02
    n = plugrad.randn(10_000, dtype=plugrad.float64)
    assert abs(float(n.numpy().std()) - 1.0) < 0.05
    if plugrad.float16 in plugrad.default_device().dtypes:
        h = plugrad.rand(1000, dtype=plugrad.float16)
        assert h.dtype == plugrad.float16 and float(h.numpy().max()) < 1.0
    assert plugrad.randn(3, requires_grad=True).requires_grad


def test_random_errors() -> None:
    with pytest.raises(DtypeError, match="floating-point numbers"):
        plugrad.randn(2, dtype=plugrad.int32)
    with pytest.raises(ValueError, match="seed"):
        plugrad.Generator(seed=2**64)
    with pytest.raises(TypeError, match="seed"):
        plugrad.manual_seed(1.5)


@pytest.mark.parametrize(
    "data",
    [
        np.array([1, "a"], dtype=object),
        np.array(["ab", "c"]),
        np.array([b"x"]),
        np.array([1.0], dtype=np.longdouble),
        np.array([1], dtype="datetime64[s]"),
        ["a", "b"],
    ],
    ids=["object", "str", "bytes", "longdouble", "datetime", "python-str"],
)
@pytest.mark.parametrize("make", [plugrad.asarray, plugrad.tensor], ids=["asarray", "tensor"])
def test_data_of_an_unsupported_dtype_is_refused_at_creation(make, data) -> None:
    with pytest.raises(DtypeError, match=r"cannot make a tensor of dtype .* float32.*int64"):
        make(data)


@pytest.mark.parametrize(
    "data", [[2**63, -1], [2**63], 2**63, [[1, 2], [-(2**63) - 1, 0]], [2**64]]
)
@pytest.mark.parametrize("make", [plugrad.asarray, plugrad.tensor], ids=["asarray", "tensor"])
def test_python_integers_beyond_int64_are_refused_not_read_as_floats(make, data) -> None:
    # NumPy reads [2**63, -1] as float64 and [2**63] as uint64; PyTorch refuses both.
    with pytest.raises(ScalarRangeError, match=r"does not fit int64.*dtype=plugrad.float64"):
        make(data)
    assert make([2**63, 1], dtype=plugrad.uint64).tolist() == [2**63, 1]
    assert make([2**63, -1], dtype=plugrad.float64).dtype == plugrad.float64
    assert make([2**63, 0.5]).dtype == plugrad.float32  # a float among them: read as floats
    assert make([2**63 - 1, -(2**63)]).tolist() == [2**63 - 1, -(2**63)]


@pytest.mark.parametrize("name", ["zeros", "ones", "empty"])
def test_factories_keep_the_standard_signature_beside_pytorch_varargs(name) -> None:
    import inspect

    function = getattr(plugrad, name)
    first = next(iter(inspect.signature(function).parameters.values()))
    assert first.name == "shape" and first.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD
    assert function(2, 3).shape == function((2, 3)).shape == function(shape=(2, 3)).shape == (2, 3)


@pytest.mark.parametrize(
    "make",
    [
        lambda: plugrad.zeros(2, dtpye=plugrad.float64),
        lambda: plugrad.ones_like(plugrad.zeros(2), devcie="numpy"),
        lambda: plugrad.tensor([1.0], requires_gard=True),
        lambda: plugrad.arange(3, backnd="numpy"),
        lambda: plugrad.randn(2, dvice="numpy"),
        lambda: plugrad.fft.fftfreq(4, dtyp=plugrad.float64),
    ],
    ids=["zeros", "ones_like", "tensor", "arange", "randn", "fftfreq"],
)
def test_a_misspelt_creation_keyword_is_refused(make) -> None:
    with pytest.raises(TypeError, match=r"unexpected keyword argument .*takes dtype=, device="):
        make()


def test_generator_states_are_saved_and_restored() -> None:
    # get_rng_state/set_rng_state, Generator.get_state/set_state/initial_seed were missing.
    import pickle

    g = plugrad.Generator(seed=5)
    state = pickle.loads(pickle.dumps(g.get_state()))  # a checkpoint holds it
    first = plugrad.rand(4, generator=g)
    assert plugrad.rand(4, generator=g.set_state(state)).tolist() == first.tolist()
    assert g.initial_seed() == 5 and isinstance(plugrad.Generator().initial_seed(), int)
    saved = plugrad.get_rng_state()
    drawn = plugrad.randn(3)
    plugrad.set_rng_state(saved)
    assert plugrad.randn(3).tolist() == drawn.tolist()
    plugrad.manual_seed(3)
    assert plugrad.initial_seed() == 3
    with plugrad.random.fork_rng():
        plugrad.rand(7)
        plugrad.manual_seed(11)  # undone too
    after = plugrad.rand(2)
    plugrad.manual_seed(3)
    assert plugrad.rand(2).tolist() == after.tolist()
    chosen = plugrad.seed()
    assert plugrad.initial_seed() == chosen
    with pytest.raises(TypeError, match="what get_state"):
        g.set_state(first)
    other = "numpy" if g.device.backend.name != "numpy" else "array_api_strict"
    with pytest.raises(ValueError, match="backend"):
        plugrad.Generator(seed=1, backend=other).set_state(state)


def test_fork_rng_of_no_listed_device_restores_the_cpu_generator_as_pytorchs() -> None:
    # devices=[] restored nothing: the draws after the block were not those without it.
    if plugrad.default_device().type != "cpu":
        pytest.skip("the default device is not a CPU")
    plugrad.manual_seed(0)
    with plugrad.random.fork_rng(devices=[]):
        plugrad.rand(5)
        plugrad.nn.functional.dropout(plugrad.ones(4), 0.5)
    after = plugrad.rand(2)
    plugrad.manual_seed(0)
    assert plugrad.rand(2).tolist() == after.tolist()


def test_the_generator_manual_seed_returns_stays_the_default_one() -> None:
    # manual_seed made new default generators: a handle kept from before drove nothing.
    kept = plugrad.manual_seed(0)
    assert plugrad.manual_seed(1) is kept
    kept.manual_seed(7)
    drawn = plugrad.rand(2)
    plugrad.manual_seed(7)
    assert plugrad.rand(2).tolist() == drawn.tolist()


def test_normal_of_tensors_draws_in_means_dtype_as_pytorch() -> None:
    # The draws were promoted with std's dtype (float32 mean, float64 std: float64).
    wide = plugrad.float64 if plugrad.float64 in plugrad.default_device().dtypes else None
    if wide is None:
        pytest.skip("the default backend has no float64")
    mean = plugrad.zeros(2, requires_grad=True)
    std = plugrad.ones(2, dtype=wide, requires_grad=True)
    assert plugrad.normal(mean.detach(), std.detach()).dtype == plugrad.float32
    drawn = plugrad.normal(mean, std)
    assert drawn.dtype == plugrad.float32
    drawn.sum().backward()
    assert mean.grad.dtype == plugrad.float32 and std.grad.dtype == wide
    assert plugrad.normal(0.0, std.detach()).dtype == wide


_HALF = "float16"


@pytest.mark.parametrize(
    ("call", "error", "message", "needs"),
    [
        # int8 wrapped 300 into 256 values; float16 draws past 65504 were inf.
        (lambda: plugrad.randperm(300, dtype=plugrad.int8), DtypeError, "holds the numbers",
         None),
        (lambda: plugrad.randperm(2050, dtype=plugrad.float16), DtypeError, "holds the numbers",
         _HALF),
        (lambda: plugrad.randint(0, 100000, (4,), dtype=plugrad.float16), ScalarRangeError,
         "does not fit float16", _HALF),
        # random_(0) drew from the whole range, as random_() does.
        (lambda: plugrad.empty(3).random_(0), ValueError, "from < to", None),
        (lambda: plugrad.empty(3).normal_(0.0, float("nan")), ValueError, "non-negative", None),
        (lambda: plugrad.empty(3).uniform_(0.0, float("inf")), ValueError, "finite", None),
        (lambda: plugrad.rand(2, generator=5), TypeError, "plugrad.Generator", None),
    ],
)  # fmt: skip
def test_draws_refuse_what_pytorch_refuses(call, error, message, needs) -> None:
    if needs == _HALF and plugrad.float16 not in plugrad.default_device().dtypes:
        pytest.skip("the default backend has no float16")
    with pytest.raises(error, match=message):
        call()


def test_draws_at_the_edges_of_a_dtype() -> None:
    assert sorted(plugrad.randperm(256, dtype=plugrad.uint8).tolist()) == list(range(256))
    assert sorted(plugrad.randperm(128, dtype=plugrad.int8).tolist()) == list(range(128))
    assert set(plugrad.empty(50).random_(2, 4).tolist()) <= {2.0, 3.0}
    assert set(plugrad.empty(50).random_(to=2).tolist()) <= {0.0, 1.0}


def test_generator_seed_and_device_as_pytorchs() -> None:
    # Generator("cpu") took "cpu" for a seed; g.seed() called an int (the seed attribute).
    device = plugrad.default_device()
    first = plugrad.Generator(device)
    assert first.device is device
    drawn = first.seed()
    assert drawn == first.initial_seed()
    sample = plugrad.rand(3, generator=first)
    assert plugrad.rand(3, generator=first.manual_seed(drawn)).tolist() == sample.tolist()
    assert plugrad.Generator(5).initial_seed() == plugrad.Generator(seed=5).initial_seed() == 5
    if device.type == "cpu":
        assert plugrad.Generator("cpu").device.type == "cpu"


def test_a_list_of_double_numpy_arrays_stays_double_as_pytorch() -> None:
    # [np.array([1.0, 2.0]), ...] was read in float32, losing digits PyTorch keeps.
    assert plugrad.tensor([np.array([1.0, 2.0]), np.array([3.0, 4.0])]).dtype == plugrad.float64
    assert plugrad.tensor([np.array([1j])]).dtype == plugrad.complex128
    assert plugrad.asarray([np.array([0.1])]).tolist() == [[0.1]]
    assert plugrad.tensor([np.array([1.0], dtype=np.float32)]).dtype == plugrad.float32
    assert plugrad.tensor([[1.0, 2.0]]).dtype == plugrad.float32


@pytest.mark.parametrize(
    "args", [(-3, 3, 1.5), (0.5,), (0, 1, 0.1), (5.5, 0, -1.5), (2.7, 10, 2.5), (0, 3.0)]
)
@pytest.mark.parametrize("dtype", ["int16", "int32", "int64"])
def test_arange_of_float_arguments_in_an_integer_dtype_as_pytorch(args, dtype) -> None:
    # int32 arange(-3, 3, 1.5) gave 6 values where PyTorch gives [-3, -2, -1, 0].
    torch = pytest.importorskip("torch")
    try:
        expected = torch.arange(*args, dtype=getattr(torch, dtype)).tolist()
    except (RuntimeError, ValueError):
        with pytest.raises(ValueError, match="step"):
            plugrad.arange(*args, dtype=getattr(plugrad, dtype))
        return
    assert plugrad.arange(*args, dtype=getattr(plugrad, dtype)).tolist() == expected


def test_normal_of_tensors_that_require_grad_has_zero_gradients_as_pytorch() -> None:
    mean = plugrad.zeros(3, requires_grad=True)
    std = plugrad.ones(3, requires_grad=True)
    sample = plugrad.normal(mean, std)
    assert sample.requires_grad  # it was a leaf without history: backward raised
    (sample * 2).sum().backward()
    assert mean.grad.tolist() == [0.0, 0.0, 0.0] and std.grad.tolist() == [0.0, 0.0, 0.0]
    with pytest.raises(ValueError, match="std must be >= 0"):
        plugrad.normal(0.0, -1.0, (2,))
    # a tensor std is checked too (it drew from a mirrored normal), and NaN fails it
    for bad in ([1.0, -1.0], [float("nan")]):
        with pytest.raises(ValueError, match="std must be >= 0"):
            plugrad.normal(plugrad.zeros(len(bad)), plugrad.tensor(bad))
    with pytest.raises(ValueError, match="std must be >= 0"):
        plugrad.normal(0.0, float("nan"), (2,))


def test_full_refuses_none_and_bernoulli_probabilities_outside_zero_to_one() -> None:
    # full((2,), None) gave NaNs; bernoulli of 2.0 gave 1 and of NaN 0, where PyTorch raises.
    with pytest.raises(TypeError, match="fill_value"):
        plugrad.full((2,), None)
    with pytest.raises(TypeError, match="fill_value"):
        plugrad.full_like(plugrad.ones(2), None)
    for bad in ([2.0], [-0.5], [float("nan")]):
        with pytest.raises(InvalidArgumentError, match=r"probabilities in \[0, 1\]"):
            plugrad.bernoulli(plugrad.tensor(bad))
    with pytest.raises(InvalidArgumentError, match=r"probabilities in \[0, 1\]"):
        plugrad.bernoulli(plugrad.ones(2), 1.5)
    compiled = plugrad.compile(lambda p: plugrad.bernoulli(p) * 1)
    for _ in range(3):
        assert compiled(plugrad.tensor([0.0, 1.0])).tolist() == [0.0, 1.0]
    assert compiled.captures == 1  # the check is in the plan, not a graph break
    with pytest.raises(InvalidArgumentError, match="compiled function"):
        compiled(plugrad.tensor([0.0, 2.0]))


def test_bernoulli_of_probabilities_that_require_grad_requires_grad_with_zero_gradient() -> None:
    # As PyTorch's: the draws join p's graph (backward through them alone reaches p, with
    # zeros), x.bernoulli(0.5) of such an x too; under no_grad or of a constant p, a leaf.
    p = plugrad.tensor([0.0, 1.0, 0.5], requires_grad=True)
    drawn = plugrad.bernoulli(p)
    assert drawn.requires_grad and drawn.grad_fn is not None
    assert drawn[:2].tolist() == [0.0, 1.0]
    (drawn * plugrad.tensor([1.0, 2.0, 3.0])).sum().backward()
    assert p.grad.tolist() == [0.0, 0.0, 0.0]
    assert p.bernoulli(0.5).requires_grad
    with plugrad.no_grad():
        assert not plugrad.bernoulli(p).requires_grad
    assert not plugrad.bernoulli(p.detach()).requires_grad

    def step(q: plugrad.Tensor) -> plugrad.Tensor:
        q.grad = None
        plugrad.bernoulli(q).sum().backward()
        return q.grad

    compiled = plugrad.compile(step, fullgraph=True)
    for _ in range(2):
        assert compiled(p).tolist() == [0.0, 0.0, 0.0]
    assert compiled.captures == 1


@pytest.mark.parametrize("name", ["rand", "randn"])
def test_random_tensors_take_pytorchs_size_keyword(name) -> None:
    # rand(size=(2, 3)) raised "unexpected keyword argument 'size'".
    make = getattr(plugrad, name)
    assert make(size=(2, 3)).shape == (2, 3) and make(size=4).shape == (4,)
    plugrad.manual_seed(0)
    first = make(size=(3,)).tolist()
    plugrad.manual_seed(0)
    assert make(3).tolist() == first
    with pytest.raises(plugrad.errors.ArgumentError, match="shape twice"):
        make(2, size=(2,))


def test_draws_take_numpy_ints_and_0d_tensors_as_sizes_and_bounds() -> None:
    # A NumPy int as the whole shape was iterated ('numpy.int64' object is not iterable);
    # randperm and randint refused NumPy ints and 0-d tensors.
    assert plugrad.rand(np.int64(3)).shape == plugrad.randn(plugrad.tensor(3)).shape == (3,)
    assert sorted(plugrad.randperm(np.int64(4)).tolist()) == [0, 1, 2, 3]
    assert sorted(plugrad.randperm(plugrad.tensor(4)).tolist()) == [0, 1, 2, 3]
    drawn = plugrad.randint(np.int64(0), plugrad.tensor(10), (50,))
    assert 0 <= int(drawn.min()) and int(drawn.max()) < 10
    with pytest.raises(TypeError, match="must be an int"):
        plugrad.randint(0, 2.5, (3,))


def test_randint_draws_every_integer_of_a_range_far_from_zero_and_wide_ranges() -> None:
    # low was added in float64: randint(2**62, 2**62 + 10) gave 2**62 every time, and
    # random_(2**62, ...) of an int64 tensor too; ranges wider than 2**53 were refused.
    if plugrad.default_device().default_int_dtype is not plugrad.int64:
        pytest.skip("the default backend has no int64")
    far = plugrad.randint(2**62, 2**62 + 10, (500,))
    assert far.dtype == plugrad.int64
    assert sorted({v - 2**62 for v in far.tolist()}) == list(range(10))
    negative = plugrad.randint(-(2**62) - 4, -(2**62), (200,))
    assert sorted({v + 2**62 for v in negative.tolist()}) == [-4, -3, -2, -1]
    filled = plugrad.zeros(500, dtype=plugrad.int64).random_(2**62, 2**62 + 3)
    assert sorted({v - 2**62 for v in filled.tolist()}) == [0, 1, 2]
    wide = plugrad.randint(0, 2**60, (2000,))
    assert 0 <= int(wide.min()) and int(wide.max()) > 2**58
    assert {v % 8 for v in wide.tolist()} == set(range(8))  # the low bits vary too
    everywhere = plugrad.randint(-(2**63), 2**63 - 1, (2000,))
    assert int(everywhere.min()) < -(2**61) and int(everywhere.max()) > 2**61
    small = plugrad.randint(-128, 128, (3000,), dtype=plugrad.int8)
    assert int(small.min()) == -128 and int(small.max()) == 127
    with pytest.raises(ScalarRangeError, match="exactly"):  # float64's integers: to 2**53
        plugrad.randint(0, 2**60, (2,), dtype=plugrad.float64)


@pytest.mark.parametrize("dtype", ["int64", "float64"])
def test_randint_of_a_range_wider_than_2_to_the_32_is_uniform(dtype: str) -> None:
    # A floored float64 draw has 2**53 values: over 3 * 2**51 integers each took one or two
    # of them, and the residues mod 3 came out 0.334, 0.375, 0.291 (z = 87).
    if plugrad.default_device().default_int_dtype is not plugrad.int64:
        pytest.skip("the default backend has no int64")
    if getattr(plugrad, dtype) not in plugrad.default_device().dtypes:
        pytest.skip(f"the default backend has no {dtype}")
    plugrad.manual_seed(0)
    count = 200_000
    drawn = plugrad.randint(0, 3 * 2**51, (count,), dtype=getattr(plugrad, dtype))
    values = drawn.numpy().astype(np.int64)
    assert values.min() >= 0 and values.max() < 3 * 2**51
    shares = np.bincount(values % 3, minlength=3) / count
    six_sigma = 6 * (2 / 9 / count) ** 0.5
    np.testing.assert_allclose(shares, 1 / 3, atol=six_sigma)
    filled = plugrad.zeros(count, dtype=plugrad.int64).random_(0, 3 * 2**51).numpy()
    np.testing.assert_allclose(np.bincount(filled % 3) / count, 1 / 3, atol=six_sigma)


def test_randint_draws_bools_as_pytorch() -> None:
    # dtype=bool was refused ("draws integers or real numbers"); PyTorch draws 0 and 1.
    flags = plugrad.randint(0, 2, (200,), dtype=plugrad.bool)
    assert flags.dtype == plugrad.bool and set(flags.tolist()) == {False, True}
    assert plugrad.randint(1, 2, (3,), dtype=plugrad.bool).tolist() == [True] * 3
    assert plugrad.randint_like(plugrad.zeros(4, dtype=plugrad.bool), 1).tolist() == [False] * 4
    for low, high in ((0, 3), (-1, 1)):
        with pytest.raises(ScalarRangeError, match="does not fit bool"):
            plugrad.randint(low, high, (3,), dtype=plugrad.bool)


def test_seeds_as_pytorch_takes_them() -> None:
    # NumPy ints and negative seeds (counted from 2**64) were refused; 2**64 overflows.
    for seed, kept in (
        (np.int64(3), 3),
        (-1, 2**64 - 1),
        (2**64 - 1, 2**64 - 1),
        (-(2**63), 2**63),
    ):
        plugrad.manual_seed(seed)
        assert plugrad.initial_seed() == kept
        first = plugrad.rand(3)
        plugrad.manual_seed(seed)
        assert plugrad.rand(3).tolist() == first.tolist()
        assert plugrad.Generator(seed=seed).initial_seed() == kept
    with pytest.raises(ValueError, match="2\\*\\*64"):
        plugrad.manual_seed(2**64)
    for wrong in (3.5, "3", True):
        with pytest.raises(TypeError, match="a seed is an int"):
            plugrad.manual_seed(wrong)
    plugrad.manual_seed(0)


def test_complex_draws_as_pytorchs() -> None:
    # randn, rand, normal_ of complex dtypes were refused; PyTorch draws the two parts
    # apart, each normal of variance 1/2 (E|z|**2 = 1) or uniform on [0, 1).
    plugrad.manual_seed(0)
    z = plugrad.randn(200_000, dtype=plugrad.complex64)
    assert z.dtype == plugrad.complex64
    for part in (plugrad.real(z), plugrad.imag(z)):
        assert abs(float(part.mean())) < 0.01 and abs(float(part.var()) - 0.5) < 0.01
    u = plugrad.rand(10_000, dtype=plugrad.complex64)
    for part in (plugrad.real(u), plugrad.imag(u)):
        assert 0.0 <= float(part.min()) and float(part.max()) < 1.0
        assert abs(float(part.mean()) - 0.5) < 0.02
    filled = plugrad.zeros(200_000, dtype=plugrad.complex64).normal_(1.0, 2.0)
    assert abs(float(plugrad.real(filled).mean()) - 1.0) < 0.02
    assert abs(float(plugrad.imag(filled).mean())) < 0.02
    assert abs(float(plugrad.real(filled).var()) - 2.0) < 0.05
    assert plugrad.randn_like(plugrad.zeros(2, dtype=plugrad.complex64)).dtype == plugrad.complex64
    with pytest.raises(DtypeError, match="floating-point numbers"):
        plugrad.randn(2, dtype=plugrad.int32)


def test_random_functions_take_python_types_as_dtypes_as_creation_does() -> None:
    # randint(..., dtype=int) raised "type object 'int' has no attribute 'kind'".
    assert plugrad.randint(0, 5, (3,), dtype=int).dtype == plugrad.int64
    assert plugrad.randperm(4, dtype=int).dtype == plugrad.int64
    assert plugrad.randint_like(plugrad.zeros(2), 5, dtype=int).dtype == plugrad.int64
    assert plugrad.normal(0.0, 1.0, (2,), dtype=float).dtype == plugrad.float64
    assert plugrad.normal(plugrad.zeros(2), 1.0, dtype=float).dtype == plugrad.float64
    assert plugrad.randn(2, dtype=float).dtype == plugrad.float64


def test_float16_draws_are_uniform_and_probabilities_are_not_rounded_to_their_grid() -> None:
    # A float32 draw rounded to float16 gave its top value 1.5 times its share, so that
    # bernoulli(1 - 2**-11) and dropout(p=1 - 2**-11) came out 1.5 times too often 0 and kept.
    if plugrad.float16 not in plugrad.default_device().dtypes:
        pytest.skip("the default backend has no float16")
    plugrad.manual_seed(0)
    count = 2_000_000
    top = np.float16(1 - 2**-11)
    expected, sigma = count / 2048, (count / 2048) ** 0.5
    drawn = plugrad.rand(count, dtype=plugrad.float16).numpy()
    assert drawn.max() <= top and abs((drawn == top).sum() - expected) < 6 * sigma
    zeros = plugrad.bernoulli(plugrad.full((count,), float(top), dtype=plugrad.float16)) == 0
    assert abs(int(zeros.sum()) - expected) < 6 * sigma
    kept = plugrad.nn.functional.dropout(plugrad.ones(count, dtype=plugrad.float16), float(top))
    assert abs(int((kept != 0).sum()) - expected) < 6 * sigma
    # A number p is drawn against in float64 (in float32 any p below 6e-8 was 6e-8).
    assert int(plugrad.empty(count).bernoulli_(1e-12).sum()) == 0


def test_the_like_draws_take_a_generator_and_randint_like_takes_high_by_name() -> None:
    # PyTorch's rand_like(x, generator=g), randint_like(x, high=6): TypeError here.
    x = plugrad.zeros(5)
    first, second = plugrad.Generator().manual_seed(3), plugrad.Generator().manual_seed(3)
    for function in (plugrad.rand_like, plugrad.randn_like):
        assert function(x, generator=first).tolist() == function(x, generator=second).tolist()
    drawn = plugrad.randint_like(x, high=6, generator=first)
    assert (
        drawn.dtype == x.dtype
        and drawn.tolist() == plugrad.randint_like(x, 0, 6, generator=second).tolist()
    )
    assert all(0 <= v < 6 for v in drawn.tolist())
    with pytest.raises(TypeError, match="needs high"):
        plugrad.randint_like(x)


@pytest.mark.parametrize(
    "call",
    [
        lambda: plugrad.full((2,), [300, 1], dtype=plugrad.uint8),
        lambda: plugrad.full((3,), [1.0, 2.0, 3.0]),
        lambda: plugrad.full((2,), "7", dtype=plugrad.int64),
        lambda: plugrad.full_like(plugrad.zeros((2, 3)), [1.0, 2.0, 3.0]),
        lambda: plugrad.zeros(2).new_full((2, 3), [1.0, 2.0, 3.0]),
    ],
)
def test_full_takes_one_number_as_its_fill_value(call) -> None:
    # A list was broadcast (and skipped the range check: 300 became 44 in uint8), a string
    # parsed; PyTorch refuses both.
    with pytest.raises(TypeError, match="one number as fill_value"):
        call()
    with pytest.raises(plugrad.errors.ShapeError, match="shape \\(2,\\)"):
        plugrad.full((2,), np.array([1.0, 2.0]))
    assert plugrad.full((2,), np.float32(2.5)).tolist() == [2.5, 2.5]
    assert plugrad.full((2,), plugrad.tensor(3)).tolist() == [3, 3]


def test_creation_refuses_impossible_sizes_and_ranges_with_plugrads_errors() -> None:
    # NumPy's own ValueError and OverflowError came through.
    with pytest.raises(InvalidArgumentError, match="rows >= 0"):
        plugrad.eye(-1)
    with pytest.raises(InvalidArgumentError, match="columns >= 0"):
        plugrad.eye(2, -3)
    for stop in (math.nan, math.inf):
        with pytest.raises(InvalidArgumentError, match="must be finite"):
            plugrad.arange(0, stop)
    with pytest.raises(InvalidArgumentError, match="values >= 0"):
        plugrad.linspace(0, 1, -1)
    for ragged, depth in (([[1, 2], [3]], 1), ([[1, 2], 3], 1), ([[[1], [2]], [[3], [4, 5]]], 2)):
        with pytest.raises(plugrad.errors.ShapeError, match=f"at depth {depth}"):
            plugrad.tensor(ragged)


def test_logspace_takes_0d_tensors_as_linspace_does() -> None:
    torch = pytest.importorskip("torch")
    ours = plugrad.logspace(plugrad.tensor(0.0), plugrad.tensor(1.0), 3, base=plugrad.tensor(2.0))
    theirs = torch.logspace(torch.tensor(0.0), torch.tensor(1.0), 3, base=2.0)
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-6)


@pytest.mark.parametrize("backend", plugrad.testing.backends_under_test())
def test_linspace_takes_0d_tensors_and_numpy_scalars_as_pytorch(backend: str) -> None:
    # A complex 0-d tensor's imaginary parts were dropped (a float32 result), and the torch
    # and JAX kernels refused 0-d tensors; Dask refused complex endpoints.
    torch = pytest.importorskip("torch")
    theirs = torch.linspace(torch.tensor(0j), torch.tensor(1 + 2j), 3)
    with plugrad.use_backend(backend):
        ours = plugrad.linspace(plugrad.tensor(0j), plugrad.tensor(1 + 2j), 3)
        assert ours.dtype == plugrad.complex64
        np.testing.assert_allclose(ours.numpy(), theirs.numpy())
        real = plugrad.linspace(plugrad.tensor(0.0), np.float64(1.0), steps=3)
        assert real.dtype == plugrad.float32 and real.tolist() == [0.0, 0.5, 1.0]
        with pytest.raises(ArgumentError, match="end is a tensor that requires grad"):
            plugrad.linspace(0.0, plugrad.tensor(1.0, requires_grad=True), 3)


@pytest.mark.skipif(
    plugrad.float16 not in plugrad.default_device().dtypes,
    reason="the default backend has no float16",
)
def test_randint_of_a_float_dtype_refuses_integers_it_cannot_hold_exactly() -> None:
    # float16 holds the integers up to 2048 exactly: 59999 was rounded up to high (60000).
    with pytest.raises(ScalarRangeError, match=r"each integer from -2048 to 2048 exactly"):
        plugrad.randint(0, 60000, (10,), dtype=plugrad.float16)
    drawn = plugrad.randint(2000, 2049, (2000,), dtype=plugrad.float16)
    assert (
        drawn.dtype == plugrad.float16 and 2000 <= drawn.min().item() <= drawn.max().item() < 2049
    )


def test_randint_like_refuses_low_given_alone_as_pytorch() -> None:
    # randint_like(x, low=3) drew from [0, 3).
    x = plugrad.zeros(500)
    with pytest.raises(TypeError, match="low=3 alone is not the upper end"):
        plugrad.randint_like(x, low=3)
    with pytest.raises(TypeError, match="got low twice"):
        plugrad.randint_like(x, 3, low=1)
    for drawn in (plugrad.randint_like(x, 3, high=5), plugrad.randint_like(x, low=3, high=5)):
        assert set(drawn.tolist()) == {3.0, 4.0}


@pytest.mark.parametrize(
    "make",
    [
        lambda: bytearray(b"\xc8\xc8"),
        lambda: memoryview(bytearray(b"\x01\x02")),
        lambda: __import__("array").array("i", [1, 2]),
        lambda: __import__("array").array("b", [-1, 5]),
        lambda: __import__("array").array("d", [1.5, 2.0]),
    ],
    ids=["bytearray", "memoryview", "array i", "array b", "array d"],
)
def test_pythons_own_buffers_are_read_as_their_numbers_as_in_pytorch(make) -> None:
    # tensor(bytearray(...)) was uint8, so adding 100 to 200 wrapped to 44.
    torch = pytest.importorskip("torch")
    for ours, theirs in ((plugrad.tensor, torch.tensor), (plugrad.as_tensor, torch.as_tensor)):
        got, expected = ours(make()), theirs(make())
        assert got.dtype.name == str(expected.dtype).removeprefix("torch.")
        assert got.tolist() == expected.tolist()
        assert (got + 100).tolist() == (expected + 100).tolist()


def test_pytorchs_keyword_forms_of_creation_calls() -> None:
    # Each raised TypeError: a required positional argument missing, or size= unknown.
    torch = pytest.importorskip("torch")
    calls = [
        lambda m: m.full(size=(2, 3), fill_value=1.5),
        lambda m: m.linspace(start=0, end=1, steps=5),
        lambda m: m.ones(2).new_zeros(size=(2, 3)),
        lambda m: m.ones(2).new_ones(size=(3,)),
        lambda m: m.ones(2).new_empty(size=(1, 2)).shape,
    ]
    for call in calls:
        got, expected = call(plugrad), call(torch)
        if isinstance(expected, torch.Tensor):
            assert got.tolist() == expected.tolist() and got.dtype.name == str(expected.dtype)[6:]
        else:
            assert tuple(got) == tuple(expected)
    drawn = plugrad.randint(high=5, size=(100,))
    assert drawn.dtype == plugrad.int64 and bool(plugrad.all((drawn >= 0) & (drawn < 5)))
    with pytest.raises(ArgumentError, match="last value once"):
        plugrad.linspace(0, 1, 3, end=2)
    with pytest.raises(TypeError, match="fill_value"):
        plugrad.full((2,))


@pytest.mark.parametrize(
    "data", [[1.5, 2**64], [1j, 2**70], [[1.5], [2**65]]], ids=["float", "complex", "nested"]
)
def test_floats_beside_an_integer_beyond_int64_are_read_as_floats(data) -> None:
    # NumPy kept them as Python objects, refused with a DtypeError about dtype object.
    torch = pytest.importorskip("torch")
    got, expected = plugrad.tensor(data), torch.tensor(data)
    assert got.dtype.name == str(expected.dtype).removeprefix("torch.")
    assert got.tolist() == expected.tolist()


def test_pytorchs_layout_and_pin_memory_keywords_are_taken() -> None:
    # Code written for PyTorch passes them (zeros(..., layout=x.layout)): a TypeError.
    for make in (
        lambda **k: plugrad.zeros(2, **k),
        lambda **k: plugrad.tensor([1.0], **k),
        lambda **k: plugrad.full((2,), 1.0, **k),
        lambda **k: plugrad.arange(2, **k),
        lambda **k: plugrad.randn(2, **k),
        lambda **k: plugrad.ones_like(plugrad.ones(2), **k),
    ):
        assert make(layout=plugrad.strided, pin_memory=False).layout == plugrad.strided
        with pytest.raises(ArgumentError, match="pin_memory=True"):
            make(pin_memory=True)
        with pytest.raises(ArgumentError, match="dense"):
            make(layout="sparse_coo")


@pytest.mark.parametrize("data", [[1 + 2j], 1 + 2j, [[1.0, 2 + 1j]]])
def test_complex_numbers_given_a_real_dtype_are_a_dtype_error(data) -> None:
    # NumPy's float() of a complex number came out as its own TypeError.
    with pytest.raises(DtypeError, match=r"cannot be held in dtype float32.*complex64"):
        plugrad.tensor(data, dtype=plugrad.float32)


@pytest.mark.parametrize("backend", plugrad.testing.backends_under_test())
@pytest.mark.parametrize(
    ("args", "kwargs"),
    [
        ((1,), {"end": 0, "step": 0.3}),
        ((), {"start": 1, "end": 0}),
        ((0,), {"end": 5, "step": -1}),
        ((), {"end": -3}),
        ((0.5,), {"end": 0.2, "dtype": "int64"}),
        ((1.0,), {"end": 1.0, "step": -0.5}),
        ((3,), {"end": 1, "step": -1}),
    ],
)
def test_arange_in_pytorchs_form_refuses_a_step_away_from_the_end_as_pytorch(args, kwargs, backend):
    # arange(1, end=0, step=0.3) was empty where PyTorch raises (the bounds and the step's
    # sign disagree); start == end is empty in both.
    torch = pytest.importorskip("torch")
    dtype = kwargs.pop("dtype", None)
    with plugrad.use_backend(backend):
        try:
            expected = torch.arange(*args, **kwargs, dtype=dtype and getattr(torch, dtype))
        except RuntimeError as error:
            assert "inconsistent with step sign" in str(error)
            with pytest.raises(InvalidArgumentError, match="moves away from the end"):
                plugrad.arange(*args, **kwargs, dtype=dtype and getattr(plugrad, dtype))
            return
        got = plugrad.arange(*args, **kwargs, dtype=dtype and getattr(plugrad, dtype))
        assert got.tolist() == expected.tolist()


def test_arange_in_the_standards_form_is_empty_for_a_step_away_from_the_stop() -> None:
    # The standard's length: ceil((stop - start) / step) where positive, else 0.
    assert plugrad.arange(1, 0, 0.3).tolist() == [] and plugrad.arange(-3).tolist() == []
    assert plugrad.arange(0, 5, -1).shape == (0,)
