"""plugrad: PyTorch-style eager autograd on any Array API backend.

``plugrad`` is itself an array namespace whose functions take and return
:class:`Tensor` objects and carry gradients. Backends (numpy by default) and
ops come from plugins, loaded once when this package is imported.

Examples
--------
>>> import plugrad
>>> x = plugrad.tensor([1.0, 2.0], requires_grad=True)
>>> y = plugrad.sum(plugrad.exp(x) * 2)
>>> y.backward()
>>> x.grad  # doctest: +ELLIPSIS
tensor([ 5.4366, 14.7781])
"""

from __future__ import annotations

import importlib as _importlib
import typing as _typing
from importlib.metadata import PackageNotFoundError
from importlib.metadata import version as _version

# Of these, tensor_operators, tensor_indexing, tensor_interop, tensor_hooks, engine, inplace
# and pickling also install Tensor methods (the operators, x[key], conversions, hooks,
# backward, the in-place updates, pickling) that the tensor layer leaves to them.
from . import (  # noqa: F401
    accelerator,
    amp,
    autograd,
    cpu,
    cuda,
    distributed,
    distributions,
    engine,
    errors,
    fft,
    func,
    inplace,
    jit,
    linalg,
    nn,
    ops,
    optim,
    pickling,
    signal,
    tensor_hooks,
    tensor_indexing,
    tensor_interop,
    tensor_operators,
    utils,
    viz,
)
from . import count_draws as _count_draws
from . import dtype_functions as _dtype_functions
from . import function_generation as _function_generation
from . import low_rank as _low_rank
from . import pytorch_complex_names as _pytorch_complex_names
from . import pytorch_linalg_names as _pytorch_linalg_names
from . import pytorch_tensor_methods as _pytorch_tensor_methods
from . import pytorch_toplevel_nn as _pytorch_toplevel_nn
from . import pytorch_toplevel_utils as _pytorch_toplevel_utils
from . import short_time_fourier as _short_time_fourier
from . import view_scatter as _view_scatter
from . import windows as _windows
from .amp import (
    autocast,
    clear_autocast_cache,
    get_autocast_dtype,
    is_autocast_cache_enabled,
    is_autocast_enabled,
    set_autocast_cache_enabled,
    set_autocast_dtype,
    set_autocast_enabled,
)
from .anomaly import is_anomaly_check_nan_enabled, is_anomaly_enabled, set_anomaly_enabled
from .compiler import compile
from .count_draws import *  # noqa: F403  (its __all__ is part of ours)
from .creation import (
    BoolTensor,
    ByteTensor,
    CharTensor,
    DoubleTensor,
    FloatTensor,
    HalfTensor,
    IntTensor,
    LongTensor,
    ShortTensor,
    arange,
    asarray,
    empty,
    empty_like,
    eye,
    full,
    full_like,
    linspace,
    logspace,
    ones,
    ones_like,
    tensor,
    tril_indices,
    triu_indices,
    zeros,
    zeros_like,
)
from .devices import device
from .dtype_functions import *  # noqa: F403  (its __all__ is part of ours)
from .dtypes import (
    DType,
    bfloat16,
    bool,
    complex64,
    complex128,
    float16,
    float32,
    float64,
    int8,
    int16,
    int32,
    int64,
    uint8,
    uint16,
    uint32,
    uint64,
)
from .dtypes import DType as dtype  # PyTorch's torch.dtype: the class of the dtypes
from .func import vmap
from .function import Function, FunctionCtx
from .grad_mode import enable_grad, inference_mode, is_grad_enabled, no_grad, set_grad_enabled
from .graph import Node
from .lazy import compute
from .low_rank import *  # noqa: F403  (its __all__ is part of ours)
from .memory_formats import (
    channels_last,
    channels_last_3d,
    contiguous_format,
    layout,
    memory_format,
    preserve_format,
    strided,
)

# PyTorch's torch.softmax, torch.relu, torch.conv2d, ...: the nn functions (the ops are
# plugrad.ops.<name>) whose arguments are torch.nn.functional's; those that take others
# (torch.batch_norm, torch.embedding, the losses, torch.dropout) are pytorch_toplevel_nn's.
from .nn.functional import (
    adaptive_avg_pool1d,
    avg_pool1d,
    bilinear,
    celu,
    celu_,
    channel_shuffle,
    conv1d,
    conv2d,
    conv3d,
    conv_transpose1d,
    conv_transpose2d,
    conv_transpose3d,
    cosine_similarity,
    hardshrink,
    log_softmax,
    logsumexp,
    max_pool1d,
    max_pool1d_with_indices,
    max_pool2d,
    max_pool3d,
    pairwise_distance,
    pdist,
    pixel_shuffle,
    pixel_unshuffle,
    prelu,
    relu,
    relu_,
    rms_norm,
    rrelu,
    rrelu_,
    selu,
    selu_,
    sigmoid,
    softmax,
    threshold,
    threshold_,
)

# (PyTorch's top-level adaptive_max_pool1d returns the indices too)
from .nn.functional import adaptive_max_pool1d_with_indices as adaptive_max_pool1d
from .placement import (
    default_device,
    get_default_device,
    set_backend,
    set_default_device,
    use_backend,
)
from .printing import get_printoptions, printoptions, set_printoptions
from .pytorch_complex_names import *  # noqa: F403  (its __all__ is part of ours)
from .pytorch_complex_names import complex as complex  # not in __all__, as float and int
from .pytorch_linalg_names import *  # noqa: F403  (its __all__ is part of ours)
from .pytorch_names import (
    allclose,
    as_tensor,
    bincount,
    block_diag,
    bucketize,
    cartesian_prod,
    chain_matmul,
    clone,
    combinations,
    cond,
    cumulative_trapezoid,
    detach,
    diag_embed,
    diagflat,
    diagonal,
    digamma,
    einsum,
    erf,
    erfc,
    erfinv,
    from_numpy,
    get_default_dtype,
    gradient,
    is_complex,
    is_floating_point,
    is_inference_mode_enabled,
    is_nonzero,
    is_tensor,
    isclose,
    lgamma,
    masked_fill,
    mvlgamma,
    numel,
    polygamma,
    promote_types,
    rsub,
    scalar_tensor,
    scatter,
    set_default_dtype,
    take_along_dim,
    trapezoid,
    trapz,
    typename,
    unravel_index,
    vander,
)
from .pytorch_tensor_methods import *  # noqa: F403  (its __all__ is part of ours)
from .pytorch_toplevel_nn import *  # noqa: F403  (its __all__ is part of ours)
from .pytorch_toplevel_utils import *  # noqa: F403  (its __all__ is part of ours)
from .random import (
    Generator,
    bernoulli,
    get_rng_state,
    initial_seed,
    manual_seed,
    multinomial,
    normal,
    rand,
    rand_like,
    randint,
    randint_like,
    randn,
    randn_like,
    randperm,
    seed,
    set_rng_state,
)
from .runtime_settings import (
    are_deterministic_algorithms_enabled,
    get_float32_matmul_precision,
    get_num_threads,
    set_float32_matmul_precision,
    set_num_threads,
    use_deterministic_algorithms,
)
from .serialization import load, save
from .short_time_fourier import *  # noqa: F403  (its __all__ is part of ours)
from .tensor import Size, Tensor
from .transfer import from_dlpack
from .view_scatter import *  # noqa: F403  (its __all__ is part of ours)
from .windows import *  # noqa: F403  (its __all__ is part of ours)

try:
    __version__ = _version("plugrad")
except PackageNotFoundError:  # running from a source tree that is not installed
    __version__ = "0.0.0+unknown"

__all__ = [
    "DType",
    "dtype",
    "Function",
    "compute",
    "FunctionCtx",
    "compile",
    "Generator",
    "Node",
    "Tensor",
    "arange",
    "asarray",
    "autograd",
    "bool",
    "complex64",
    "complex128",
    "default_device",
    "get_default_device",
    "distributed",
    "distributions",
    "empty",
    "empty_like",
    "enable_grad",
    "eye",
    "errors",
    "fft",
    "float16",
    "bfloat16",
    "float32",
    "float64",
    "from_dlpack",
    "full",
    "full_like",
    "func",
    "get_printoptions",
    "int8",
    "int16",
    "int32",
    "int64",
    "is_anomaly_check_nan_enabled",
    "is_anomaly_enabled",
    "is_grad_enabled",
    "linalg",
    "linspace",
    "load",
    "manual_seed",
    "nn",
    "no_grad",
    "ones",
    "ones_like",
    "ops",
    "optim",
    "amp",
    "autocast",
    "clear_autocast_cache",
    "get_autocast_dtype",
    "is_autocast_cache_enabled",
    "set_autocast_cache_enabled",
    "set_autocast_dtype",
    "set_autocast_enabled",
    "is_autocast_enabled",
    "printoptions",
    "rand",
    "randn",
    "save",
    "set_backend",
    "set_anomaly_enabled",
    "set_grad_enabled",
    "set_printoptions",
    "tensor",
    "testing",
    "uint8",
    "uint16",
    "uint32",
    "uint64",
    "use_backend",
    "utils",
    "viz",
    "zeros",
    "zeros_like",
    "Size",
    "BoolTensor",
    "ByteTensor",
    "CharTensor",
    "DoubleTensor",
    "FloatTensor",
    "HalfTensor",
    "IntTensor",
    "LongTensor",
    "ShortTensor",
    "allclose",
    "bernoulli",
    "multinomial",
    "einsum",
    "inference_mode",
    "isclose",
    "log_softmax",
    "logsumexp",
    "relu",
    "sigmoid",
    "softmax",
    "adaptive_avg_pool1d",
    "avg_pool1d",
    "bilinear",
    "celu",
    "channel_shuffle",
    "conv1d",
    "conv2d",
    "conv_transpose1d",
    "conv_transpose2d",
    "cosine_similarity",
    "hardshrink",
    "max_pool1d",
    "max_pool1d_with_indices",
    "max_pool2d",
    "pairwise_distance",
    "pdist",
    "pixel_shuffle",
    "pixel_unshuffle",
    "prelu",
    "rms_norm",
    "selu",
    "threshold",
    "adaptive_max_pool1d",
    "celu_",
    "conv3d",
    "conv_transpose3d",
    "max_pool3d",
    "relu_",
    "rrelu",
    "rrelu_",
    "selu_",
    "threshold_",
    "as_tensor",
    "accelerator",
    "cpu",
    "cuda",
    "jit",
    "device",
    "from_numpy",
    "get_default_dtype",
    "is_tensor",
    "normal",
    "numel",
    "rand_like",
    "randint",
    "randint_like",
    "randn_like",
    "randperm",
    "set_default_device",
    "set_default_dtype",
    "clone",
    "diagonal",
    "is_complex",
    "is_floating_point",
    "is_nonzero",
    "masked_fill",
    "promote_types",
    "scalar_tensor",
    "scatter",
    "take_along_dim",
    "logspace",
    "tril_indices",
    "triu_indices",
    "bincount",
    "block_diag",
    "bucketize",
    "cartesian_prod",
    "unravel_index",
    "chain_matmul",
    "combinations",
    "gradient",
    "diag_embed",
    "diagflat",
    "erf",
    "erfc",
    "erfinv",
    "lgamma",
    "digamma",
    "polygamma",
    "mvlgamma",
    "i0",
    "igamma",
    "igammac",
    "vander",
    "trapezoid",
    "trapz",
    "cumulative_trapezoid",
    "cond",
    "detach",
    "is_inference_mode_enabled",
    "rsub",
    "typename",
    "special",
    "memory_format",
    "layout",
    "strided",
    "preserve_format",
    "contiguous_format",
    "channels_last",
    "channels_last_3d",
    "get_rng_state",
    "set_rng_state",
    "initial_seed",
    "seed",
    "set_num_threads",
    "get_num_threads",
    "use_deterministic_algorithms",
    "are_deterministic_algorithms_enabled",
    "set_float32_matmul_precision",
    "get_float32_matmul_precision",
    "vmap",
]

# Loading plugins adds one function per built-in op to this namespace (plugrad.add, ...).
from . import registry as _registry

_registry.load()
from . import special  # noqa: E402  (its functions are those load() made)
from .bessel import i0  # noqa: E402  (PyTorch's torch.i0, also special.i0 and x.i0())
from .special import igamma, igammac  # noqa: E402  (PyTorch's names for gammainc, gammaincc)

if _typing.TYPE_CHECKING:  # the functions load() installs, as type checkers see them
    from . import testing
    from ._api_linalg import outer as outer
    from ._api_plugrad import *  # noqa: F403
__all__ += _dtype_functions.__all__
__all__ += _count_draws.__all__
__all__ += _low_rank.__all__
__all__ += _pytorch_complex_names.__all__
__all__ += _pytorch_linalg_names.__all__
__all__ += _pytorch_tensor_methods.__all__
__all__ += _pytorch_toplevel_nn.__all__
__all__ += _pytorch_toplevel_utils.__all__
__all__ += _short_time_fourier.__all__
__all__ += _view_scatter.__all__
__all__ += _windows.__all__
# The built-in op functions installed here; a name already public (the fft module) is listed once.
__all__ += [name for name in _registry.op_names() if name in globals() and name not in __all__]
# PyTorch's top-level in-place functions made from the ops' in-place methods (plugrad.exp_).
__all__ += [name for name in _function_generation.top_level_in_place() if name not in __all__]

# PyTorch's short dtype names (plugrad.float is plugrad.float32, ...). Not in __all__:
# a star import must not shadow Python's float and int.
float = float32
double = float64
half = float16
long = int64
int = int32
short = int16
cfloat = complex64
cdouble = complex128


def __getattr__(name: str) -> object:
    if name == "testing":  # test helpers, imported when first used
        return _importlib.import_module("plugrad.testing")
    if name == "outer":
        # PyTorch's torch.outer is the standard's linalg function (of vectors); its main
        # namespace has none, so the name is free.
        return linalg.outer
    from .pytorch_names import MISSING_DTYPES

    if name in MISSING_DTYPES:
        raise AttributeError(f"plugrad.{name}: {MISSING_DTYPES[name]}")
    raise AttributeError(f"module 'plugrad' has no attribute {name!r}")
